// Package bucket is Weft's object storage: a small Bucket interface with two
// backends, a local directory (FS, the embedded default) and S3 (minio-go),
// plus an in-memory Mem for unit tests and a Prefix decorator.
//
// Everything Weft stores is an object in a Bucket. Consistency rests on two
// conditional writes and nothing else:
//
//   - PutIfAbsent creates an object only if its key is free (S3 If-None-Match: *).
//   - CompareAndSwap replaces an object only if it still has the ETag the caller
//     read (S3 If-Match).
//
// Every write is atomic: a reader sees the old object or the whole new one,
// never a part. The acceptance suite in bucket/buckettest checks every backend
// and decorator against this contract.
package bucket
