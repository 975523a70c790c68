package adversarial_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// allInputs is every input of the suite: the shared file's, then the
// tickets and puts built here.
func allInputs(t *testing.T, fx *fixture) []input {
	out := fileInputs(t, fx.vars())
	out = append(out, ticketInputs()...)
	return append(out, putInputs()...)
}

// TestAdversarial sends every bad input to one real flightd per store and
// checks, after each, its code and message, that the store is
// byte-for-byte unchanged, and that the server still answers; at the end,
// that the process is alive with no panic in its log. Inputs listed in
// knownBugs run in TestKnownBugs instead.
func TestAdversarial(t *testing.T) {
	if testing.Short() {
		t.Skip("the adversarial suite runs a flightd process: skipped with -short")
	}
	for i, mk := range stores() {
		t.Run(storeName(i), func(t *testing.T) {
			st := mk(t)
			srv := startFlightd(t, st)
			fx := setup(t, srv.addr)
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
				cur = runInput(t, srv, st, fx, cnt, in, cur)
				if !srv.alive() {
					break
				}
			}
			srv.requireHealthy(t)
			t.Logf("%s: %d inputs in %v (%d known bugs run in TestKnownBugs), %d objects in the store:\n%s",
				st.name, cnt.total(), time.Since(start).Round(time.Millisecond), skipped, len(cur), cnt)
		})
	}
}

// runInput sends one input and checks the answer, the store against cur
// (returning the store as it is now) and that the server still answers.
func runInput(t *testing.T, srv *flightd, st *store, fx *fixture, cnt *counts, in input, cur map[string]string) map[string]string {
	t.Run(in.key(), func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		err := in.call(ctx, fx)
		cnt.add(in.category, checkAnswer(t, err, in.want))
		after := st.objects(t)
		if d := diff(cur, after); d != "" {
			t.Errorf("the store changed: %s", d)
			cur = after
		}
		require.True(t, srv.alive(), "flightd died")
		_, err = fx.c.Branches(ctx, "adv")
		require.NoError(t, err, "the server no longer answers")
	})
	return cur
}
