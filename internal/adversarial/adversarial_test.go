package adversarial_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/auth"
)

// allInputs is every input of the suite: the shared file's, then the
// tickets, puts, protobuf messages, idempotency keys and auth calls built
// here.
func allInputs(t *testing.T, fx *fixture) []input {
	out := fileInputs(t, fx.vars())
	out = append(out, ticketInputs()...)
	out = append(out, putInputs()...)
	out = append(out, protoInputs()...)
	out = append(out, idemInputs()...)
	return append(out, authInputs()...)
}

// prepare starts a flightd over st (open, as on loopback by default) and
// builds the fixture through it; then a signer over the store's key, and
// a second flightd over the same store with --auth tokens and its tokens.
// It returns the fixture and both servers (only the first without
// withAuth: then the auth inputs cannot run).
func prepare(t *testing.T, st *store, withAuth bool) (*fixture, []*flightd) {
	t.Helper()
	srv := startFlightd(t, st)
	fx := setup(t, srv.addr)
	signer, err := auth.NewSigner(ctxT(t), st.bucket, auth.DefaultSignerOptions())
	require.NoError(t, err)
	fx.signer = signer
	if !withAuth {
		return fx, []*flightd{srv}
	}
	fx.auth = setupAuth(t, st, fx)
	return fx, []*flightd{srv, fx.auth.srv}
}

// TestAdversarial sends every bad input to one real flightd per store
// (auth inputs: to a second one with --auth tokens) and checks, after
// each, its code and message, that the store is byte-for-byte unchanged,
// and that the servers still answer; at the end, that the processes are
// alive with no panic in their logs. Inputs listed in knownBugs run in
// TestKnownBugs instead.
func TestAdversarial(t *testing.T) {
	if testing.Short() {
		t.Skip("the adversarial suite runs a flightd process: skipped with -short")
	}
	for i, mk := range stores() {
		t.Run(storeName(i), func(t *testing.T) {
			st := mk(t)
			fx, servers := prepare(t, st, true)
			inputs := allInputs(t, fx)
			require.GreaterOrEqual(t, len(inputs), 300)
			cnt := newCounts()
			start := time.Now()
			cur := st.objects(t)
			skipped := 0
			for _, in := range inputs {
				if knownBugs[in.key()] != "" {
					skipped++
					continue
				}
				cur = runInput(t, servers, st, fx, cnt, in, cur)
				if !alive(servers) {
					break
				}
			}
			for _, srv := range servers {
				srv.requireHealthy(t)
			}
			t.Logf("%s: %d inputs in %v (%d known bugs run in TestKnownBugs), %d objects in the store:\n%s",
				st.name, cnt.total(), time.Since(start).Round(time.Millisecond), skipped, len(cur), cnt)
		})
	}
}

func alive(servers []*flightd) bool {
	for _, s := range servers {
		if !s.alive() {
			return false
		}
	}
	return true
}

// runInput sends one input and checks the answer, the store against cur
// (returning the store as it is now) and that the servers still answer.
func runInput(t *testing.T, servers []*flightd, st *store, fx *fixture, cnt *counts, in input, cur map[string]string) map[string]string {
	t.Run(in.key(), func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		err := in.call(ctx, fx)
		if in.ok {
			require.NoError(t, err)
			cnt.add(in.category, codes.OK)
		} else {
			cnt.add(in.category, checkAnswer(t, err, in.want))
		}
		after := st.objects(t)
		if d := diff(cur, after); d != "" && !in.commits {
			t.Errorf("the store changed: %s", d)
		} else if d == "" && in.commits {
			t.Errorf("the store did not change: the put committed nothing")
		}
		cur = after
		require.True(t, alive(servers), "flightd died")
		_, err = fx.c.Branches(ctx, "adv")
		require.NoError(t, err, "the server no longer answers")
		if fx.auth != nil {
			_, err = fx.auth.clients["readA"].Branches(ctx, "adv")
			require.NoError(t, err, "the tokens server no longer answers")
		}
	})
	return cur
}
