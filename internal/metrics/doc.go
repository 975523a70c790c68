// Package metrics is flightd's operational surface: the Prometheus metrics
// of the gRPC server, the Flight bytes, the bucket, the block cache, the
// memory budget and the run records, plus /healthz and /readyz.
//
// Every metric is registered on the prometheus.Registerer given to New (no
// global registry), is named weft_… with the unit suffixes Prometheus asks
// for (_total, _seconds, _bytes), and has only bounded labels: a gRPC
// method of the Flight service, a gRPC code, a bucket operation, a result.
// Never a project, table, branch or run id. docs/operations.md lists them.
//
// The parts that produce numbers stay unaware of Prometheus: the gRPC
// server takes ServerOptions, the bucket a bucket.Observer, and the cache
// and the memory budget are read at scrape time through a function or
// their Stats method (NewCacheCollector, NewBudgetCollector).
package metrics
