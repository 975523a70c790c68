package main

import (
	"context"
	"log/slog"

	"github.com/weftdata/weft/gpu"
)

// logGPU says once, at start, whether this host could deliver video on the
// GPU and why not (issue 15). Device slots are not served yet: even with a
// GPU, clients decode on the CPU for now.
func logGPU(ctx context.Context, log *slog.Logger) {
	st := gpu.Probe(ctx, gpu.DefaultOptions())
	if !st.On {
		log.Info("GPU delivery is off", "why", st.Reason)
		return
	}
	log.Info("GPU found; GPU delivery is off: device slots are not served yet (clients decode on the CPU)",
		"gpu", st.Info.Name, "uuid", st.Info.UUIDString(), "driver", st.Info.DriverVersion)
}
