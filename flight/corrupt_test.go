package flight_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdata/weft/bucket"
	"github.com/weftdata/weft/client"
	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/internal/s3test"
	"github.com/weftdata/weft/tables"
	"github.com/weftdata/weft/versions"
)

// logBuffer collects a server's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// corruption damages the store's copy of table "bad" of project "bad".
type corruption func(t *testing.T, b bucket.Bucket)

// badObjects returns the keys of the table's data files and of its
// manifest, and the ref's key.
func badObjects(t *testing.T, b bucket.Bucket) (files []string, manifest string) {
	t.Helper()
	ctx := context.Background()
	v, err := versions.New(b, versions.DefaultOptions())
	require.NoError(t, err)
	id, err := v.Resolve(ctx, "bad", "main")
	require.NoError(t, err)
	c, err := v.GetCommit(ctx, "bad", id)
	require.NoError(t, err)
	m, err := v.GetManifest(ctx, "bad", c.Tables["t"])
	require.NoError(t, err)
	for _, f := range m.Files {
		files = append(files, versions.DataFileKey("bad", f.Path))
	}
	return files, versions.ManifestKey("bad", m.ID)
}

func put(t *testing.T, b bucket.Bucket, key string, data []byte) {
	t.Helper()
	_, err := b.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
}

func get(t *testing.T, b bucket.Bucket, key string) []byte {
	t.Helper()
	data, _, err := b.Get(context.Background(), key)
	require.NoError(t, err)
	return data
}

// editFooter rewrites the footer of the data file at key with edit.
func editFooter(t *testing.T, b bucket.Bucket, key string, edit func(md *metadata.FileMetaData)) {
	t.Helper()
	data := get(t, b, key)
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	start := len(data) - 8 - n
	md, err := metadata.NewFileMetaData(data[start:len(data)-8], nil)
	require.NoError(t, err)
	edit(md)
	footer, err := md.Serialize(context.Background())
	require.NoError(t, err)
	out := append(bytes.Clone(data[:start]), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	put(t, b, key, append(out, "PAR1"...))
}

// TestCorruptStore damages one table's objects in the bucket the ways
// other tools and bad disks do, and checks that every call that touches
// them (a scan's flight info and stream, a run's plan and rank stream)
// fails as Corrupt (Internal with an error id; the log has "corrupt
// data", never a panic), that the process lives on, and that it keeps
// serving the other project's table in full.
func TestCorruptStore(t *testing.T) {
	cases := []struct {
		name   string
		damage corruption
		// harmless: the server does not use the damaged part (it reads
		// the manifest's schema, not a data file's copy): every call
		// succeeds.
		harmless bool
	}{
		{"data file truncated", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			data := get(t, b, files[0])
			put(t, b, files[0], data[:len(data)/2])
		}, false},
		{"data file garbage", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			garbage := make([]byte, 4096)
			rand.New(rand.NewSource(1)).Read(garbage)
			put(t, b, files[0], garbage)
		}, false},
		{"data file pages flipped", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			for _, key := range files {
				data := get(t, b, key)
				rng := rand.New(rand.NewSource(int64(len(data))))
				for range 64 {
					data[4+rng.Intn(len(data)/2)] ^= 0x5a
				}
				put(t, b, key, data)
			}
		}, false},
		{"data file missing", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			require.NoError(t, b.Delete(context.Background(), files[0]))
		}, false},
		{"footer claims a 2^40-byte column chunk", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			editFooter(t, b, files[0], func(md *metadata.FileMetaData) {
				for _, rg := range md.RowGroups {
					for _, c := range rg.Columns {
						c.MetaData.TotalCompressedSize = 1 << 40
						c.MetaData.TotalUncompressedSize = 1 << 40
					}
				}
			})
		}, false},
		{"footer claims a negative column chunk", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			editFooter(t, b, files[0], func(md *metadata.FileMetaData) {
				md.RowGroups[0].Columns[1].MetaData.TotalCompressedSize = -40
			})
		}, false},
		{"footer claims a 2^40-row row group", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			editFooter(t, b, files[0], func(md *metadata.FileMetaData) {
				md.RowGroups[0].NumRows = 1 << 40
				md.NumRows = 1 << 40
			})
		}, false},
		{"footer's Arrow schema garbage", func(t *testing.T, b bucket.Bucket) {
			files, _ := badObjects(t, b)
			editFooter(t, b, files[0], func(md *metadata.FileMetaData) {
				for _, kv := range md.KeyValueMetadata() {
					if kv.Key == "ARROW:schema" {
						v := strings.Repeat("/////w", 200)
						kv.Value = &v
					}
				}
			})
		}, true},
		{"manifest garbage", func(t *testing.T, b bucket.Bucket) {
			_, m := badObjects(t, b)
			put(t, b, m, []byte(`{"format":1,"table":"t","files":[{"path":"data/t/x.parquet","rows":-1}]}`))
		}, false},
		{"manifest truncated", func(t *testing.T, b bucket.Bucket) {
			_, m := badObjects(t, b)
			data := get(t, b, m)
			put(t, b, m, data[:len(data)/3])
		}, false},
		{"ref garbage", func(t *testing.T, b bucket.Bucket) {
			put(t, b, versions.RefKey("bad", "main"), []byte("not a commit\n"))
		}, false},
		{"commit garbage", func(t *testing.T, b bucket.Bucket) {
			v, err := versions.New(b, versions.DefaultOptions())
			require.NoError(t, err)
			id, err := v.Resolve(context.Background(), "bad", "main")
			require.NoError(t, err)
			put(t, b, versions.CommitKey("bad", id), []byte("\x00\x01garbage"))
		}, false},
		{"schema garbage under a valid id", func(t *testing.T, b bucket.Bucket) {
			// Another tool commits a manifest whose ids are right but whose
			// schema is not an Arrow schema (a flipped byte of one).
			ctx := context.Background()
			v, err := versions.New(b, versions.DefaultOptions())
			require.NoError(t, err)
			files, mkey := badObjects(t, b)
			_ = files
			id, err := v.Resolve(ctx, "bad", "main")
			require.NoError(t, err)
			c, err := v.GetCommit(ctx, "bad", id)
			require.NoError(t, err)
			m, err := v.GetManifest(ctx, "bad", c.Tables["t"])
			require.NoError(t, err)
			require.Equal(t, mkey, versions.ManifestKey("bad", m.ID))
			bad := *m
			bad.Schema = bytes.Clone(m.Schema)
			bad.Schema[len(bad.Schema)/3] ^= 0xff
			mid, err := v.PutManifest(ctx, "bad", &bad)
			require.NoError(t, err)
			_, err = v.Commit(ctx, "bad", "main", "another tool", func(context.Context, *versions.Commit) (map[versions.TableName]versions.ManifestID, error) {
				return map[versions.TableName]versions.ManifestID{"t": mid}, nil
			})
			require.NoError(t, err)
		}, false},
	}
	backs := map[string]func(t *testing.T) bucket.Bucket{
		"fs": func(t *testing.T) bucket.Bucket {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			return b
		},
		"minio": func(t *testing.T) bucket.Bucket { return s3test.SharedMinIO(t).NewBucket(t, t.Name()) },
	}
	for bname, newBucket := range backs {
		t.Run(bname, func(t *testing.T) {
			if bname == "minio" && testing.Short() {
				t.Skip("-short: the fs store only")
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					b := newBucket(t)
					logs := &logBuffer{}
					e := newEnv(t, b, envOpts{
						tables: func(o *tables.Options) { o.RowGroupRows = 100 },
						flight: func(o *flight.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) },
					})
					for _, p := range []string{"bad", "good"} {
						e.createProject(p)
						e.mustPut(p, "main", "t", 0, 300, 150, 16)
						e.mustPut(p, "main", "t", 300, 200, 200, 16)
					}
					tc.damage(t, b)

					failed := 0
					check := func(what string, err error) {
						t.Helper()
						if err == nil {
							return
						}
						failed++
						st := status.Convert(err)
						require.Equal(t, codes.Internal.String(), st.Code().String(), "%s: %s", what, st.Message())
						require.Contains(t, st.Message(), "error id", what)
					}
					ctx := ctxT(t)
					info, err := e.client.GetFlightInfo(ctx, pathDesc("bad", "main", "t"))
					check("GetFlightInfo", err)
					if err == nil {
						for _, ep := range info.Endpoint {
							_, _, err := e.read(ctx, ep.Ticket, nil)
							check("DoGet scan", err)
						}
					}
					recipe := func(p string) client.RunCommand {
						return client.RunCommand{Recipe: &client.Recipe{Seed: 7, BatchSize: 50, Components: []client.Component{{Project: p, Table: "t", Weight: 1}}}, WorldSize: world(1)}
					}
					plan, err := e.c.PlanRun(ctx, recipe("bad"))
					check("PlanRun", err)
					if err == nil {
						_, err := e.readRank(ctx, plan.Ranks[0])
						check("DoGet rank", err)
					}
					log := logs.String()
					require.NotContains(t, log, "panic")
					if tc.harmless {
						require.Zero(t, failed)
						require.Equal(t, seq(0, 500), e.scan(e.info(pathDesc("bad", "main", "t"))))
					} else {
						require.Positive(t, failed, "no call failed on the damaged table")
						// Every internal error is the store's damage (Corrupt),
						// not a fault of the server's.
						internal := 0
						for _, line := range strings.Split(log, "\n") {
							if strings.Contains(line, `msg="internal error"`) {
								internal++
								require.Contains(t, line, "corrupt data", "an internal error of another kind")
							}
						}
						require.Equal(t, failed, internal)
					}

					// The server lives on and serves the other project.
					require.Equal(t, seq(0, 500), e.scan(e.info(pathDesc("good", "main", "t"))))
					steps, err := e.readRank(ctx, e.plan(recipe("good")).Ranks[0])
					require.NoError(t, err)
					require.Len(t, steps, 10)
				})
			}
		})
	}
}

// TestCorruptMedia replaces a committed media object in a real fs store
// with a damaged MP4 (its sample table claiming 2^32-1 samples, or cut
// short): a video window over it is FailedPrecondition naming the media
// object, nothing panics, and the other project's video is still served.
func TestCorruptMedia(t *testing.T) {
	clip := makeMP4(t, 30)
	sha := digest(clip)
	claims := bytes.Clone(clip)
	at := bytes.Index(claims, []byte("stsz"))
	require.Positive(t, at)
	binary.BigEndian.PutUint32(claims[at+8:], 1)           // uniform sample size
	binary.BigEndian.PutUint32(claims[at+12:], 0xFFFFFFFF) // sample count
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"stsz claims 2^32-1 samples", claims},
		{"truncated", clip[:len(clip)/2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bucket.NewFS(t.TempDir())
			require.NoError(t, err)
			w := newEnv(t, b, envOpts{})
			ctx := ctxT(t)
			for _, p := range []string{"bad", "good"} {
				w.createProject(p)
				_, err := w.c.PutMedia(ctx, p, "ep.mp4", bytes.NewReader(clip), int64(len(clip)), sha)
				require.NoError(t, err)
				rr := videoBatch(w, sha, 30)
				_, err = w.c.Put(ctx, client.PutDescriptor{Project: p, Branch: "main", Table: "t"}, rr)
				rr.Release()
				require.NoError(t, err)
			}
			w.stop()
			put(t, b, versions.MediaKey("bad", sha), tc.data)
			// A server that has not indexed the object yet reads it.
			logs := &logBuffer{}
			e := newEnv(t, b, envOpts{flight: func(o *flight.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) }})
			recipe := func(p string) client.Recipe {
				return client.Recipe{Seed: 1, BatchSize: 5, Components: []client.Component{{Project: p, Table: "t", Weight: 1,
					Windows: map[string]client.Window{"wrist_camera": {Kind: "video", Spec: []byte(`{"frames":[-1,0]}`)}}}}}
			}
			var failed error
			plan, err := e.c.Resolve(ctx, recipe("bad"), 1)
			if err == nil {
				_, failed = e.readRank(ctx, plan.Ranks[0])
			} else {
				failed = err
			}
			requireCode(t, failed, codes.FailedPrecondition, sha[:12])
			require.NotContains(t, logs.String(), "panic")

			plan, err = e.c.Resolve(ctx, recipe("good"), 1)
			require.NoError(t, err)
			steps, err := e.readRank(ctx, plan.Ranks[0])
			require.NoError(t, err)
			require.Len(t, steps, 6)
		})
	}
}
