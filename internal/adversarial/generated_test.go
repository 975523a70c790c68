package adversarial_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/weftdata/weft/auth"
)

// Inputs built here rather than in inputs.json: they need a real ticket
// to edit, or Arrow streams to send.

// Tickets are "weft" | version | kind | JSON payload | key id (4 bytes) |
// HMAC-SHA256 (32 bytes) (flight/ticket.go, docs/format.md "Auth
// objects"). A ticket edited in any byte, or made without the store's key,
// must be refused by the signature check (InvalidArgument). To reach the
// payload decoders behind it, the suite signs payloads with the store's
// own key (fx.signer, over the same bucket): what a server bug could
// issue, never a client.
const ticketHead, ticketSig = 6, auth.TicketOverhead

// frame is a ticket's bytes before its signature.
func frame(version, kind byte, payload []byte) []byte {
	return append([]byte{'w', 'e', 'f', 't', version, kind}, payload...)
}

// signed frames payload and signs it with the store's key.
func (fx *fixture) signed(version, kind byte, payload []byte) []byte {
	return fx.signer.Sign(context.Background(), frame(version, kind, payload))
}

// payloadOf is the JSON payload of a (well-formed) ticket.
func payloadOf(ticket []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(ticket[ticketHead:len(ticket)-ticketSig], &m); err != nil {
		panic(fmt.Sprintf("not a version-2 ticket: %v", err))
	}
	return m
}

func editPayload(ticket []byte, edit func(m map[string]any)) []byte {
	m := payloadOf(ticket)
	edit(m)
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return raw
}

// edited is ticket with its payload edited and its old signature kept:
// what a client can make.
func edited(ticket []byte, edit func(m map[string]any)) []byte {
	out := frame(ticket[4], ticket[5], editPayload(ticket, edit))
	return append(out, ticket[len(ticket)-ticketSig:]...)
}

// resigned is ticket with its payload edited, signed with the store's key.
func (fx *fixture) resigned(ticket []byte, edit func(m map[string]any)) []byte {
	return fx.signed(ticket[4], ticket[5], editPayload(ticket, edit))
}

// forgedMAC signs frame with key as kid, the way auth.Signer does.
func forgedMAC(t []byte, kid uint32, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("weft-ticket:1"))
	h.Write(binary.BigEndian.AppendUint32(nil, kid))
	h.Write(t)
	return append(binary.BigEndian.AppendUint32(slices.Clone(t), kid), h.Sum(nil)...)
}

func set(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
func del(k string) func(map[string]any)        { return func(m map[string]any) { delete(m, k) } }

func want(c codes.Code) expectation { return expectation{codes: []codes.Code{c}} }

// ticketInputs edits, forges and re-signs the fixture's real scan and
// rank tickets.
func ticketInputs() []input {
	var out []input
	add := func(name string, want expectation, ticket func(fx *fixture) []byte) {
		out = append(out, input{category: "ticket", name: name, want: want, call: func(ctx context.Context, fx *fixture) error {
			return fx.doGet(ctx, ticket(fx))
		}})
	}
	kinds := map[string]func(fx *fixture) []byte{
		"scan": func(fx *fixture) []byte { return fx.scanTicket },
		"rank": func(fx *fixture) []byte { return fx.rankTicket[1] },
	}
	ia := want(codes.InvalidArgument)
	for _, kind := range []string{"scan", "rank"} {
		real := kinds[kind]
		body := func(fx *fixture) []byte { t := real(fx); return t[ticketHead : len(t)-ticketSig] }
		// Cut short, flipped, grown: the signature catches them.
		for _, cut := range []int{1, 7, 8, 9, 20, 32, 35, 36, 37} {
			add(fmt.Sprintf("%s truncated by %d", kind, cut), ia, func(fx *fixture) []byte { t := real(fx); return t[:len(t)-cut] })
		}
		add(kind+" header only", ia, func(fx *fixture) []byte { return real(fx)[:ticketHead] })
		add(kind+" signature only", ia, func(fx *fixture) []byte { t := real(fx); return t[len(t)-ticketSig:] })
		for _, pos := range []string{"first", "version", "kind", "payload start", "payload middle", "payload end", "key id", "mac start", "mac end"} {
			add(fmt.Sprintf("%s bit flipped in %s", kind, pos), ia, func(fx *fixture) []byte {
				t := slices.Clone(real(fx))
				i := map[string]int{"first": 0, "version": 4, "kind": 5, "payload start": 6, "payload middle": len(t) / 2,
					"payload end": len(t) - ticketSig - 1, "key id": len(t) - ticketSig + 3, "mac start": len(t) - 32, "mac end": len(t) - 1}[pos]
				t[i] ^= 0x04
				return t
			})
		}
		add(kind+" one byte appended", ia, func(fx *fixture) []byte { return append(slices.Clone(real(fx)), 0) })
		add(kind+" one byte prepended", ia, func(fx *fixture) []byte { return append([]byte{'w'}, real(fx)...) })
		add(kind+" twice", ia, func(fx *fixture) []byte { return append(slices.Clone(real(fx)), real(fx)...) })
		add(kind+" payload replaced, old signature", ia, func(fx *fixture) []byte {
			t := slices.Clone(real(fx))
			copy(t[ticketHead:], strings.Repeat(" ", len(t)-ticketHead-ticketSig))
			return t
		})
		add(kind+" version 1 (checksummed, unsigned)", ia, func(fx *fixture) []byte {
			t := frame(1, real(fx)[5], body(fx))
			sum := sha256.Sum256(t)
			return append(t, sum[:8]...)
		})
		// Made without the store's key.
		add(kind+" forged with another key", ia, func(fx *fixture) []byte {
			return forgedMAC(frame(2, real(fx)[5], body(fx)), 1, bytes.Repeat([]byte{7}, 32))
		})
		add(kind+" forged with an empty key", ia, func(fx *fixture) []byte { return forgedMAC(frame(2, real(fx)[5], body(fx)), 1, nil) })
		add(kind+" forged under unknown key id", ia, func(fx *fixture) []byte {
			return forgedMAC(frame(2, real(fx)[5], body(fx)), 99, bytes.Repeat([]byte{7}, 32))
		})
		add(kind+" signature moved to another payload", ia, func(fx *fixture) []byte {
			other := kinds[map[string]string{"scan": "rank", "rank": "scan"}[kind]](fx)
			return append(frame(2, real(fx)[5], body(fx)), other[len(other)-ticketSig:]...)
		})
		add(kind+" signature of the other kind byte", ia, func(fx *fixture) []byte {
			t := slices.Clone(real(fx))
			t[5] = map[string]byte{"scan": 2, "rank": 1}[kind]
			return t
		})
		// Signed with the store's key: the frame and payload checks.
		add(kind+" signed version 1", ia, func(fx *fixture) []byte { return fx.signed(1, real(fx)[5], body(fx)) })
		add(kind+" signed version 0", ia, func(fx *fixture) []byte { return fx.signed(0, real(fx)[5], body(fx)) })
		add(kind+" signed version 3", ia, func(fx *fixture) []byte { return fx.signed(3, real(fx)[5], body(fx)) })
		add(kind+" signed, magic wrong", ia, func(fx *fixture) []byte {
			return fx.signer.Sign(ctx0, append([]byte("WEFT\x02"), real(fx)[5:len(real(fx))-ticketSig]...))
		})
		add(kind+" signed, empty", ia, func(fx *fixture) []byte { return fx.signer.Sign(ctx0, nil) })
		for _, k := range []byte{0, 3, 255} {
			add(fmt.Sprintf("%s signed kind %d", kind, k), ia, func(fx *fixture) []byte { return fx.signed(2, k, body(fx)) })
		}
		other := map[string]byte{"scan": 2, "rank": 1}[kind]
		add(kind+" payload signed under the other kind", ia, func(fx *fixture) []byte { return fx.signed(2, other, body(fx)) })
		for name, payload := range map[string]string{"empty": "", "null": "null", "list": "[]", "string": `"x"`, "object": "{}",
			"not json": "{p:", "trailing": "{} {}", "deep": strings.Repeat("[", 10000)} {
			add(fmt.Sprintf("%s signed payload %s", kind, name), ia, func(fx *fixture) []byte {
				return fx.signed(2, real(fx)[5], []byte(payload))
			})
		}
		add(kind+" signed 64 KiB", ia, func(fx *fixture) []byte { return fx.resigned(real(fx), set("p", strings.Repeat("p", 64<<10))) })
	}

	// Edited by a client: the old signature no longer matches.
	for _, e := range []struct {
		kind, name string
		edit       func(map[string]any)
	}{
		{"scan", "project", set("p", "nope")},
		{"scan", "table", set("t", "u")},
		{"scan", "commit", set("c", strings.Repeat("0", 64))},
		{"scan", "columns", set("cols", []string{"name"})},
		{"scan", "blocks", set("b1", 1)},
		{"scan", "no first block", del("b0")},
		{"rank", "project", set("p", "nope")}, // the project of a rank ticket is only a hint to the run's lookup: the signature pins it
		{"rank", "rank", set("r", 0)},
		{"rank", "world", set("w", 1)},
		{"rank", "steps", set("s0", 4)},
		{"rank", "run", set("run", strings.Repeat("0", 64))},
		{"rank", "no rank", del("r")},
	} {
		add(e.kind+" edited "+e.name, ia, func(fx *fixture) []byte { return edited(kinds[e.kind](fx), e.edit) })
	}

	scan := func(name string, want expectation, edit ...func(map[string]any)) {
		add("scan signed "+name, want, func(fx *fixture) []byte {
			return fx.resigned(fx.scanTicket, func(m map[string]any) {
				for _, e := range edit {
					e(m)
				}
			})
		})
	}
	nf := want(codes.NotFound)
	scan("unknown commit", nf, set("c", strings.Repeat("0", 64)))
	scan("commit prefix", ia, func(m map[string]any) { m["c"] = m["c"].(string)[:8] })
	scan("commit upper", ia, func(m map[string]any) { m["c"] = strings.ToUpper(m["c"].(string)) })
	scan("commit number", ia, set("c", 7))
	scan("commit null", ia, set("c", nil))
	scan("no commit", ia, del("c"))
	add("scan signed root commit", nf, func(fx *fixture) []byte { return fx.resigned(fx.scanTicket, set("c", fx.root)) })
	scan("unknown project", nf, set("p", "nope"))
	scan("project traversal", ia, set("p", "../adv"))
	scan("project empty", ia, set("p", ""))
	scan("unknown table", nf, set("t", "nope"))
	scan("table u", ia, set("t", "u")) // 5 rows in 1 block, not the 20 the ticket promises
	scan("table traversal", ia, set("t", "../../t"))
	scan("unknown column", ia, set("cols", []string{"nope"}))
	scan("reserved column", ia, set("cols", []string{"_row"}))
	scan("columns null item", ia, set("cols", []any{nil}))
	scan("columns string", ia, set("cols", "id"))
	scan("first block -1", ia, set("b0", -1))
	scan("end before first", ia, set("b0", 2), set("b1", 1))
	scan("end past the blocks", ia, set("b1", 999))
	scan("end max int", ia, set("b1", 1<<62))
	scan("first block float", ia, set("b0", 0.5))
	scan("rows wrong", ia, set("n", 19))
	scan("rows negative", ia, set("n", -1))
	scan("rows huge", ia, set("n", 1<<62))
	scan("no first block", ia, del("b0"))
	scan("no end block", ia, del("b1"))
	scan("no rows", ia, del("n"))
	scan("no table", ia, del("t"))
	scan("no project", ia, del("p"))
	scan("unknown field", ia, set("x", 1))
	scan("run field", ia, set("run", "x"))

	rank := func(name string, want expectation, edit ...func(map[string]any)) {
		add("rank signed "+name, want, func(fx *fixture) []byte {
			return fx.resigned(fx.rankTicket[1], func(m map[string]any) {
				for _, e := range edit {
					e(m)
				}
			})
		})
	}
	rank("rank = world", ia, set("r", 2))
	rank("rank > world", ia, set("r", 7))
	rank("rank -1", ia, set("r", -1))
	rank("rank huge", ia, set("r", 1<<40))
	rank("world 0", ia, set("w", 0), set("r", 0))
	rank("world -2", ia, set("w", -2))
	rank("world 3 does not divide 4", ia, set("w", 3))
	rank("world 8 > batch", ia, set("w", 8))
	rank("world 2^40", ia, set("w", 1<<40))
	rank("start -1", ia, set("s0", -1))
	rank("start at end", ia, set("s0", 5))
	rank("end past end", ia, set("s1", 6))
	rank("end = start", ia, set("s0", 2), set("s1", 2))
	rank("end max int", ia, set("s1", 1<<62))
	rank("unknown run", nf, set("run", strings.Repeat("0", 64)))
	rank("run prefix", ia, func(m map[string]any) { m["run"] = m["run"].(string)[:8] })
	rank("run null", ia, set("run", nil))
	rank("project invalid", ia, set("p", ".."))
	rank("no rank", ia, del("r"))
	rank("no world", ia, del("w"))
	rank("no start step", ia, del("s0"))
	rank("no end step", ia, del("s1"))
	rank("no run", ia, del("run"))
	rank("no project", ia, del("p"))
	rank("unknown field", ia, set("cols", []string{"id"}))
	rank("rank string", ia, set("r", "1"))
	// Not here: a rank ticket signed with another project ("p": "nope")
	// streams adv's run (mix.Engine.Load looks the run up in every
	// project). Only a server can sign, and it writes the run's project;
	// DoGet checks read access on every project the ticket names.
	return out
}

var ctx0 = context.Background()

// putInputs are DoPuts of bad streams, schemas and types.
func putInputs() []input {
	var out []input
	add := func(name string, want expectation, call func(ctx context.Context, fx *fixture) error) {
		out = append(out, input{category: "put", name: name, want: want, call: call})
	}
	ia := want(codes.InvalidArgument)
	toT := pathDesc("adv", "main", "t")
	batch := func(schema *arrow.Schema, rows string) func() (*arrow.Schema, []arrow.RecordBatch, error) {
		return func() (*arrow.Schema, []arrow.RecordBatch, error) { return fromJSON(schema, rows) }
	}
	f := func(name string, typ arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: typ, Nullable: nullable}
	}
	i64, str, f64 := arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64
	for _, tc := range []struct {
		name   string
		schema *arrow.Schema
		rows   string
	}{
		{"column renamed", arrow.NewSchema([]arrow.Field{f("ID", i64, false), f("name", str, true), f("x", f64, true)}, nil), `[{"ID": 1, "name": "a", "x": 1}]`},
		{"id int32", arrow.NewSchema([]arrow.Field{f("id", arrow.PrimitiveTypes.Int32, false), f("name", str, true), f("x", f64, true)}, nil), `[{"id": 1, "name": "a", "x": 1}]`},
		{"x float32", arrow.NewSchema([]arrow.Field{f("id", i64, false), f("name", str, true), f("x", arrow.PrimitiveTypes.Float32, true)}, nil), `[{"id": 1, "name": "a", "x": 1}]`},
		{"name large_string", arrow.NewSchema([]arrow.Field{f("id", i64, false), f("name", arrow.BinaryTypes.LargeString, true), f("x", f64, true)}, nil), `[{"id": 1, "name": "a", "x": 1}]`},
		{"columns reordered", arrow.NewSchema([]arrow.Field{f("name", str, true), f("id", i64, false), f("x", f64, true)}, nil), `[{"id": 1, "name": "a", "x": 1}]`},
		{"extra column", arrow.NewSchema([]arrow.Field{f("id", i64, false), f("name", str, true), f("x", f64, true), f("y", i64, true)}, nil), `[{"id": 1, "name": "a", "x": 1, "y": 2}]`},
		{"missing column", arrow.NewSchema([]arrow.Field{f("id", i64, false), f("name", str, true)}, nil), `[{"id": 1, "name": "a"}]`},
		{"u's schema", uSchema, `[{"id": "a", "z": 1}]`},
		{"null in non-null id", arrow.NewSchema([]arrow.Field{f("id", i64, true), f("name", str, true), f("x", f64, true)}, nil), `[{"id": 1, "name": "a", "x": 1}, {"id": null, "name": "b", "x": 2}]`},
	} {
		add("schema mismatch: "+tc.name, ia, func(ctx context.Context, fx *fixture) error { return fx.put(ctx, toT, nil, batch(tc.schema, tc.rows)) })
	}
	add("schema mismatch: duplicate column", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, toT, nil, func() (*arrow.Schema, []arrow.RecordBatch, error) {
			s := arrow.NewSchema([]arrow.Field{f("id", i64, false), f("id", i64, false), f("name", str, true), f("x", f64, true)}, nil)
			mem := memory.DefaultAllocator
			ids, _, _ := array.FromJSON(mem, i64, strings.NewReader(`[1]`))
			defer ids.Release()
			names, _, _ := array.FromJSON(mem, str, strings.NewReader(`["a"]`))
			defer names.Release()
			xs, _, _ := array.FromJSON(mem, f64, strings.NewReader(`[1]`))
			defer xs.Release()
			return s, []arrow.RecordBatch{array.NewRecordBatch(s, []arrow.Array{ids, ids, names, xs}, 1)}, nil
		})
	})
	add("schema mismatch: no columns", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, toT, nil, func() (*arrow.Schema, []arrow.RecordBatch, error) {
			s := arrow.NewSchema(nil, nil)
			return s, []arrow.RecordBatch{array.NewRecordBatch(s, nil, 3)}, nil
		})
	})
	add("no batches", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, toT, nil, func() (*arrow.Schema, []arrow.RecordBatch, error) { return tSchema, nil, nil })
	})
	add("no batches, new table", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, pathDesc("adv", "main", "fresh"), nil, func() (*arrow.Schema, []arrow.RecordBatch, error) { return tSchema, nil, nil })
	})
	add("zero-row batch", ia, func(ctx context.Context, fx *fixture) error { return fx.put(ctx, toT, nil, batch(tSchema, `[]`)) })
	add("three zero-row batches", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, toT, nil, func() (*arrow.Schema, []arrow.RecordBatch, error) {
			var recs []arrow.RecordBatch
			for range 3 {
				_, r, _ := fromJSON(tSchema, `[]`)
				recs = append(recs, r...)
			}
			return tSchema, recs, nil
		})
	})
	add("command descriptor", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, cmdDesc([]byte(`{"project":"adv","branch":"main","table":"t"}`)), nil, goodBatch)
	})
	add("unknown descriptor type", ia, func(ctx context.Context, fx *fixture) error {
		return fx.put(ctx, &arrowflight.FlightDescriptor{Type: 7, Path: []string{"adv", "main", "t"}}, nil, goodBatch)
	})
	add("no descriptor", ia, func(ctx context.Context, fx *fixture) error { return fx.put(ctx, nil, nil, goodBatch) })

	// Dictionaries whose indices point outside their dictionary.
	dictSchema := func(idx arrow.DataType) *arrow.Schema {
		return arrow.NewSchema([]arrow.Field{f("id", i64, false), f("d", &arrow.DictionaryType{IndexType: idx, ValueType: str}, true)}, nil)
	}
	for _, tc := range []struct {
		name    string
		idxType arrow.DataType
		idx     string
	}{
		{"index past the end", arrow.PrimitiveTypes.Int32, `[0, 1, 5]`},
		{"negative index", arrow.PrimitiveTypes.Int8, `[0, -1, 1]`},
		{"uint64 max index", arrow.PrimitiveTypes.Uint64, `[0, 18446744073709551615, 1]`},
		{"int64 min index", arrow.PrimitiveTypes.Int64, `[0, -9223372036854775808, 1]`},
	} {
		add("dictionary "+tc.name, ia, func(ctx context.Context, fx *fixture) error {
			return fx.put(ctx, pathDesc("adv", "main", "dict"), nil, func() (*arrow.Schema, []arrow.RecordBatch, error) {
				mem := memory.DefaultAllocator
				idx, _, err := array.FromJSON(mem, tc.idxType, strings.NewReader(tc.idx))
				if err != nil {
					return nil, nil, err
				}
				defer idx.Release()
				dict, _, _ := array.FromJSON(mem, str, strings.NewReader(`["a", "b"]`))
				defer dict.Release()
				d := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: tc.idxType, ValueType: str}, idx, dict)
				defer d.Release()
				ids, _, _ := array.FromJSON(mem, i64, strings.NewReader(`[0, 1, 2]`))
				defer ids.Release()
				s := dictSchema(tc.idxType)
				return s, []arrow.RecordBatch{array.NewRecordBatch(s, []arrow.Array{ids, d}, 3)}, nil
			})
		})
	}

	// Types the store cannot give back exactly: refused at DoPut, naming
	// the column (the full matrix is in types_test.go).
	for _, tc := range []struct {
		name string
		typ  arrow.DataType
		json string
	}{
		{"large_list<large_string>", arrow.LargeListOf(arrow.BinaryTypes.LargeString), `[["a"], null]`},
		{"date64", arrow.FixedWidthTypes.Date64, `[0, 86400000]`},
		{"time32[s]", arrow.FixedWidthTypes.Time32s, `[0, 1]`},
		{"duration[ns]", arrow.FixedWidthTypes.Duration_ns, `[0, 1]`},
		{"string_view", arrow.BinaryTypes.StringView, `["a", "b"]`},
		{"arrow.json", mustJSON(), `["{}", "1"]`},
		{"arrow.bool8", extensions.NewBool8Type(), `[true, false]`},
		{"arrow.opaque", extensions.NewOpaqueType(arrow.BinaryTypes.Binary, "g", "v"), `["YQ==", "Yg=="]`},
		{"interval[month]", arrow.FixedWidthTypes.MonthInterval, `[{"months": 1}, {"months": 2}]`},
		{"decimal32", &arrow.Decimal32Type{Precision: 9, Scale: 2}, `["1.25", "2.00"]`},
		{"struct<>", arrow.StructOf(), `[{}, {}]`},
		{"run_end_encoded", arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, str), `["a", "a"]`},
		{"list_view", arrow.ListViewOf(arrow.PrimitiveTypes.Int32), `[[1], []]`},
		{"dense_union", arrow.DenseUnionOf([]arrow.Field{f("i", arrow.PrimitiveTypes.Int32, true)}, []arrow.UnionTypeCode{0}), `[[0, 1], [0, 2]]`},
	} {
		add("refused type "+tc.name, expectation{codes: []codes.Code{codes.InvalidArgument}, contains: `"c"`}, func(ctx context.Context, fx *fixture) error {
			schema := arrow.NewSchema([]arrow.Field{f("id", i64, false), f("c", tc.typ, true)}, nil)
			return fx.put(ctx, pathDesc("adv", "main", "typed"), nil, func() (*arrow.Schema, []arrow.RecordBatch, error) {
				arr, _, err := array.FromJSON(memory.DefaultAllocator, tc.typ, strings.NewReader(tc.json))
				if err != nil {
					return nil, nil, err
				}
				defer arr.Release()
				ids, _, _ := array.FromJSON(memory.DefaultAllocator, i64, strings.NewReader(`[0, 1]`))
				defer ids.Release()
				return schema, []arrow.RecordBatch{array.NewRecordBatch(schema, []arrow.Array{ids, arr}, 2)}, nil
			})
		})
	}
	// Column names that could not be echoed in full.
	add("column name 64 KiB", ia, func(ctx context.Context, fx *fixture) error {
		s := arrow.NewSchema([]arrow.Field{f(strings.Repeat("c", 64<<10), i64, false)}, nil)
		return fx.put(ctx, toT, nil, batch(s, `[]`))
	})
	add("1000 columns, mismatched", ia, func(ctx context.Context, fx *fixture) error {
		fields := make([]arrow.Field, 1000)
		for i := range fields {
			fields[i] = f(fmt.Sprintf("col%04d", i), i64, true)
		}
		return fx.put(ctx, toT, nil, batch(arrow.NewSchema(fields, nil), `[{"col0000": 1}]`))
	})
	return out
}

func mustJSON() arrow.DataType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err)
	}
	return t
}
