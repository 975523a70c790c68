package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdata/weft/internal/membudget"
)

// CacheStats are the block cache's numbers at one moment: counters since
// start (Hits, Misses, Joins, Evictions) and gauges (Bytes, Entries).
type CacheStats struct {
	Hits      int64 // block requests served from the cache
	Misses    int64 // block requests that read and decoded the block
	Joins     int64 // block requests that waited for a decode in progress
	Evictions int64 // blocks dropped to stay within the cache's size
	Bytes     int64 // bytes of the blocks cached now
	Entries   int64 // blocks cached now
}

// NewCacheCollector returns a collector that calls stats at every scrape
// and exports the result as weft_block_cache_… metrics. stats must be safe
// to call concurrently and cheap (atomic loads).
func NewCacheCollector(stats func() CacheStats) prometheus.Collector {
	return &funcCollector[CacheStats]{stats: stats, metrics: []statMetric[CacheStats]{
		counter("weft_block_cache_hits_total", "Block requests served from the decoded-block cache.", func(s CacheStats) int64 { return s.Hits }),
		counter("weft_block_cache_misses_total", "Block requests that read and decoded the block (cache misses).", func(s CacheStats) int64 { return s.Misses }),
		counter("weft_block_cache_joins_total", "Block requests that waited for a decode already in progress.", func(s CacheStats) int64 { return s.Joins }),
		counter("weft_block_cache_evictions_total", "Blocks evicted from the cache to stay within its size.", func(s CacheStats) int64 { return s.Evictions }),
		gauge("weft_block_cache_bytes", "Bytes of the blocks in the cache now.", func(s CacheStats) int64 { return s.Bytes }),
		gauge("weft_block_cache_entries", "Blocks in the cache now.", func(s CacheStats) int64 { return s.Entries }),
	}}
}

// NewBudgetCollector returns a collector of the memory budget's numbers
// (weft_memory_budget_…), read from b.Stats at every scrape. A nil b (no
// budget) gives a collector with no metrics.
func NewBudgetCollector(b *membudget.Budget) prometheus.Collector {
	c := &funcCollector[membudget.Stats]{stats: b.Stats}
	if b != nil {
		c.metrics = []statMetric[membudget.Stats]{
			gauge("weft_memory_budget_bytes", "Bytes the memory budget (--memory-limit) hands out at most.", func(s membudget.Stats) int64 { return s.Total }),
			gauge("weft_memory_budget_used_bytes", "Bytes of the memory budget reserved now (cache, streams, uploads).", func(s membudget.Stats) int64 { return s.Used }),
			counter("weft_memory_budget_waits_total", "Reservations that had to wait for other holders to release bytes.", func(s membudget.Stats) int64 { return s.Waits }),
			counter("weft_memory_budget_refusals_total", "Reservations refused with ResourceExhausted (too large, or the wait timed out).", func(s membudget.Stats) int64 { return s.Refused }),
		}
	}
	return c
}

// GPUStats are GPU delivery's numbers (issue 15, gpu.Stats) at one moment:
// counters since flightd opened the device, and the device's memory in use.
type GPUStats struct {
	SessionsCreated int64 // NVDEC sessions (decoder + stream) made
	SessionsReused  int64 // NVDEC sessions taken from the pool
	Decoded         int64 // pictures NVDEC decoded
	Kept            int64 // frames written to a destination (device slot)
	FrameCopyBytes  int64 // frame bytes copied device<->host: 0 on the delivery path
	MemUsedBytes    int64 // the whole device's memory in use (cuMemGetInfo)
}

// NewGPUCollector returns a collector of GPU delivery's numbers
// (weft_gpu_…), read from stats at every scrape. A nil stats (GPU delivery
// off) gives a collector with no metrics. stats must be safe to call
// concurrently, also after the device is closed.
func NewGPUCollector(stats func() GPUStats) prometheus.Collector {
	c := &funcCollector[GPUStats]{stats: stats}
	if stats != nil {
		c.metrics = []statMetric[GPUStats]{
			counter("weft_gpu_decode_sessions_created_total", "NVDEC sessions (a decoder and a stream) created for cuda-ipc delivery.", func(s GPUStats) int64 { return s.SessionsCreated }),
			counter("weft_gpu_decode_sessions_reused_total", "NVDEC sessions taken from the pool instead of created.", func(s GPUStats) int64 { return s.SessionsReused }),
			counter("weft_gpu_frames_decoded_total", "Pictures NVDEC decoded (a window's frames and the GOP lead-in before them).", func(s GPUStats) int64 { return s.Decoded }),
			counter("weft_gpu_frames_kept_total", "Decoded frames written to their destinations (device slots).", func(s GPUStats) int64 { return s.Kept }),
			counter("weft_gpu_frame_copy_bytes_total", "Frame bytes copied between device and host; 0 while only cuda-ipc delivery runs.", func(s GPUStats) int64 { return s.FrameCopyBytes }),
			gauge("weft_gpu_memory_used_bytes", "The whole device's memory in use now (cuMemGetInfo: every process's).", func(s GPUStats) int64 { return s.MemUsedBytes }),
		}
	}
	return c
}

// funcCollector exports numbers of one stats struct, read at each scrape.
type funcCollector[S any] struct {
	stats   func() S
	metrics []statMetric[S]
}

type statMetric[S any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(S) int64
}

func counter[S any](name, help string, value func(S) int64) statMetric[S] {
	return statMetric[S]{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, value}
}

func gauge[S any](name, help string, value func(S) int64) statMetric[S] {
	return statMetric[S]{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, value}
}

func (c *funcCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

func (c *funcCollector[S]) Collect(ch chan<- prometheus.Metric) {
	if len(c.metrics) == 0 {
		return
	}
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(m.value(s)))
	}
}
