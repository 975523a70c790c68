// Package bench holds Weft's end-to-end benchmarks: programs (as testing.B
// functions, so that they can start MinIO with internal/s3test) that print
// a table of figures against physical ceilings and peers. They never fail
// on time.
//
//	make bench-mix    training mixes over Flight (mix_test.go); results in mix-results.md
package bench
