package adversarial_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/client"
)

// The idem category: DoPut's app_metadata {"idempotency_key": K} (docs/
// flight.md, "Idempotent puts"). Malformed metadata or keys are
// InvalidArgument with nothing stored; one valid key put twice commits
// once, the second answering the same commit with "replayed"; the same key
// on another table or branch is InvalidArgument.

// idemKey is the one valid key the category commits with.
const idemKey = "adv-idem-0b7e2c4a-6b0f-4cf1-9a53-1d2f0c3e8a77"

// idemInputs are the idempotency rows, in order: the valid put comes
// before its replays and reuses.
func idemInputs() []input {
	var out []input
	ia := want(codes.InvalidArgument)
	bad := func(name string, meta []byte) {
		out = append(out, input{category: "idem", name: name, want: ia, call: func(ctx context.Context, fx *fixture) error {
			return fx.put(ctx, pathDesc("adv", "main", "idem"), meta, goodBatch)
		}})
	}
	for _, m := range []struct{ name, meta string }{
		{"not json", `{idempotency_key: "k"}`},
		{"json cut short", `{"idempotency_key": "k"`},
		{"whitespace only", `   `},
		{"a list", `[]`},
		{"a string", `"k"`},
		{"null", `null`},
		{"a number", `1`},
		{"true", `true`},
		{"key null", `{"idempotency_key": null}`},
		{"key a number", `{"idempotency_key": 1}`},
		{"key a list", `{"idempotency_key": ["k"]}`},
		{"key an object", `{"idempotency_key": {"k": 1}}`},
		{"key empty", `{"idempotency_key": ""}`},
		{"key 257 characters", `{"idempotency_key": "` + strings.Repeat("k", 257) + `"}`},
		{"key 64 KiB", `{"idempotency_key": "` + strings.Repeat("k", 64<<10) + `"}`},
		{"key with a space", `{"idempotency_key": "a b"}`},
		{"key with a tab", `{"idempotency_key": "a\tb"}`},
		{"key with a newline", `{"idempotency_key": "a\nb"}`},
		{"key with NUL", `{"idempotency_key": "a\u0000b"}`},
		{"key with DEL", `{"idempotency_key": "a\u007fb"}`},
		{"key with é", `{"idempotency_key": "clé"}`},
		{"key with an emoji", `{"idempotency_key": "k🔑"}`},
		{"key of spaces", `{"idempotency_key": "   "}`},
		{"key with invalid utf-8", "{\"idempotency_key\": \"k\xff\"}"},
		{"unknown field", `{"idempotency_key": "k", "x": 1}`},
		{"only an unknown field", `{"key": "k"}`},
		{"trailing data", `{"idempotency_key": "k"} {}`},
		{"key nested", `{"put": {"idempotency_key": "k"}}`},
	} {
		bad("metadata "+m.name, []byte(m.meta))
	}
	bad("metadata 1 MiB of spaces", []byte(strings.Repeat(" ", 1<<20)))
	bad("metadata binary", []byte{0x00, 0xff, 0x10, 0x80})

	// One valid key, twice: one commit, then a replay of it.
	putKey := func(ctx context.Context, fx *fixture, table, branch, first string) (client.PutResult, error) {
		schema, recs, err := fromJSON(tSchema, first)
		if err != nil {
			return client.PutResult{}, err
		}
		r, err := array.NewRecordReader(schema, recs)
		recs[0].Release()
		if err != nil {
			return client.PutResult{}, err
		}
		defer r.Release()
		return fx.c.Put(ctx, client.PutDescriptor{Project: "adv", Branch: branch, Table: table, IdempotencyKey: idemKey}, r)
	}
	out = append(out, input{category: "idem", name: "valid key: commits", ok: true, commits: true, call: func(ctx context.Context, fx *fixture) error {
		res, err := putKey(ctx, fx, "idem", "main", tRows(100, 3))
		if err != nil {
			return err
		}
		if res.Replayed || res.Rows != 3 {
			return fmt.Errorf("the first put with a key answered %+v; want a commit of 3 rows, not replayed", res)
		}
		fx.idemCommit = res.Commit
		return nil
	}})
	for _, rows := range []struct{ name, rows string }{{"same rows", tRows(100, 3)}, {"other rows", tRows(200, 5)}} {
		out = append(out, input{category: "idem", name: "valid key again, " + rows.name + ": replayed", ok: true, call: func(ctx context.Context, fx *fixture) error {
			res, err := putKey(ctx, fx, "idem", "main", rows.rows)
			if err != nil {
				return err
			}
			if !res.Replayed || res.Commit != fx.idemCommit || res.Rows != 3 {
				return fmt.Errorf("a put with a committed key answered %+v; want replayed commit %s of 3 rows", res, fx.idemCommit)
			}
			return nil
		}})
	}
	for _, o := range []struct{ name, table, branch string }{
		{"another table", "t", "main"},
		{"a new table", "idem2", "main"},
		{"another branch", "idem", "dev"},
	} {
		out = append(out, input{category: "idem", name: "valid key on " + o.name, want: ia, call: func(ctx context.Context, fx *fixture) error {
			_, err := putKey(ctx, fx, o.table, o.branch, tRows(100, 3))
			return err
		}})
	}
	return out
}
