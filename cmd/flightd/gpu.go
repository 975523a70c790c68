package main

import (
	"context"
	"flag"
	"log/slog"
	"sync"

	"github.com/weftdata/weft/flight"
	"github.com/weftdata/weft/gpu"
	"github.com/weftdata/weft/internal/membudget"
	"github.com/weftdata/weft/internal/metrics"
)

// gpuConfig is GPU delivery's flags (issue 15, docs/gpu.md).
type gpuConfig struct {
	opts gpu.Options
	// memoryLimit is --gpu-memory-limit: device memory all device slot
	// rings may hold together (0: unlimited).
	memoryLimit int64
	// fakeMemory is --gpu-fake-memory (tests with the fake driver only):
	// device slots are /dev/shm files the fake's CPU kernel writes.
	fakeMemory bool
	// sessions is --gpu-decode-sessions: a step's segments one exchange
	// decodes at once.
	sessions int
}

func gpuFlags(fs *flag.FlagSet, c *gpuConfig) {
	c.opts = gpu.DefaultOptions()
	fs.StringVar(&c.opts.CudaLib, "gpu-cuda-lib", c.opts.CudaLib, "GPU delivery: the libcuda to dlopen (`NAME` or path)")
	fs.StringVar(&c.opts.CuvidLib, "gpu-cuvid-lib", c.opts.CuvidLib, "GPU delivery: the libnvcuvid to dlopen (`NAME` or path)")
	fs.IntVar(&c.opts.Device, "gpu-device", c.opts.Device, "GPU delivery: the CUDA device ordinal (`N`)")
	size64Var(fs, &c.memoryLimit, "gpu-memory-limit", "GPU delivery: device memory (`SIZE`) the device slots of all cuda-ipc exchanges may hold together; an exchange whose ring does not fit gets fewer slots, then host slots; 0 is unlimited")
	fs.IntVar(&c.sessions, "gpu-decode-sessions", flight.DefaultGPUSessions, "GPU delivery: how many of a step's video segments one cuda-ipc exchange decodes at once (`N` NVDEC sessions in flight)")
	fs.DurationVar(&c.opts.ReleaseWait, "gpu-release-wait", c.opts.ReleaseWait, "GPU delivery: how long a decode waits for the trainer's release event of a device slot (its kernels still reading the slot) before it rewrites the slot (`DURATION`); past it the exchange refuses the step and the client goes on on the host path")
	fs.BoolVar(&c.fakeMemory, "gpu-fake-memory", false, "tests only, with the CPU fake driver (gpu/testdata/fakedriver) in --gpu-cuda-lib and --gpu-cuvid-lib: device slots are /dev/shm files, their IPC handles the files' paths")
}

// openGPU opens the device for cuda-ipc exchanges and says once, at start,
// whether GPU delivery is on and why not. nil: off.
func openGPU(ctx context.Context, log *slog.Logger, c gpuConfig) *flight.GPUDelivery {
	var budget *membudget.Budget // nil: unlimited
	if c.memoryLimit > 0 {
		// A budget of its own, apart from --memory-limit's host bytes: the
		// device rings (gpu.RingOptions.Budget) and the device's own tables,
		// filters and resize scratch (gpu.Options.Budget) take from it
		// without waiting.
		var err error
		if budget, err = membudget.New(membudget.Options{Total: c.memoryLimit}); err != nil {
			log.Info("GPU delivery is off", "why", err.Error())
			return nil
		}
	}
	opts := c.opts
	opts.Budget = budget
	d, err := gpu.Open(ctx, opts)
	if err != nil {
		log.Info("GPU delivery is off", "why", err.Error())
		return nil
	}
	if c.sessions < 1 {
		d.Close()
		log.Info("GPU delivery is off", "why", "--gpu-decode-sessions must be at least 1")
		return nil
	}
	g := &flight.GPUDelivery{Device: d, Memory: d.Memory(), Budget: budget, Sessions: c.sessions}
	if c.fakeMemory {
		mem := gpu.NewShmMemory("")
		// Fake device slots a killed flightd left in /dev/shm: remove
		// those whose owner is gone, as slots.Sweep does for host rings.
		if files, bytes, err := mem.Sweep(); err != nil {
			log.Warn("sweeping dead servers' fake device slots", "err", err)
		} else if files > 0 {
			log.Info("removed fake device slots of servers that died", "files", files, "bytes", bytes)
		}
		g.Memory = mem
	}
	info := d.Info()
	log.Info("GPU delivery is on (delivery \"cuda-ipc\")", "gpu", info.Name, "uuid", info.UUIDString(), "driver", info.DriverVersion,
		"gpu_memory_limit", c.memoryLimit, "fake_memory", c.fakeMemory)
	return g
}

// gpuStats reads the device's counters for /metrics until the device is
// closed (gpu.Device.Stats after Close would read a freed driver), then
// keeps the last numbers.
type gpuStats struct {
	mu   sync.Mutex
	d    *gpu.Device // nil once closed
	last metrics.GPUStats
}

func newGPUStats(g *flight.GPUDelivery) *gpuStats {
	if g == nil || g.Device == nil {
		return nil
	}
	return &gpuStats{d: g.Device}
}

// stats is the collector's function (nil when GPU delivery is off).
func (s *gpuStats) stats() func() metrics.GPUStats {
	if s == nil {
		return nil
	}
	return func() metrics.GPUStats {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.d != nil {
			st := s.d.Stats()
			s.last = metrics.GPUStats{SessionsCreated: st.SessionsCreated, SessionsReused: st.SessionsReused, Decoded: st.Decoded,
				Kept: st.Kept, FrameCopyBytes: st.FrameCopyBytes, MemUsedBytes: st.MemUsed}
		}
		return s.last
	}
}

// close closes the device, after which scrapes get the last numbers.
func (s *gpuStats) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	d := s.d
	s.d = nil
	s.mu.Unlock()
	if d != nil {
		_ = d.Close()
	}
}
