package flight

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc"

	"github.com/weftdata/weft/slots"
)

// SetBeforeCall installs a hook run at the start of DoAction,
// GetFlightInfo and DoGet (e.g. to force a panic).
func SetBeforeCall(s *Service, f func(method string)) { s.beforeCall = f }

// SetLocalPeer replaces the check of whether a call's peer is on this
// host (to play a remote peer).
func SetLocalPeer(s *Service, f func(ctx context.Context) bool) { s.localPeer = f }

// SetRingHook installs a hook called with each host-slot ring made.
func SetRingHook(s *Service, f func(*slots.Ring)) { s.ringHook = f }

// SetClientEndHook installs a hook called when an exchange sees its
// client's end of its side (before it acts on it).
func SetClientEndHook(s *Service, f func()) { s.clientEndHook = f }

// SetSlotBytes makes every ring's slots n bytes (0: as the stream's step
// estimate says).
func SetSlotBytes(s *Service, n int64) { s.slotBytes = n }

// SetGPU serves "cuda-ipc" exchanges with g (Parts.GPU of a running service).
func SetGPU(s *Service, g *GPUDelivery) { s.gpu = g }

// WindowPTS is, per row of a video window column, its frames' PTS (nil:
// not a video window).
func WindowPTS(a arrow.Array) [][]int64 {
	w, err := readWindows(a)
	if err != nil {
		return nil
	}
	out := make([][]int64, w.Rows)
	for i := range out {
		out[i] = w.PTS[i*w.T : (i+1)*w.T]
	}
	return out
}

// SlotSteps counts the host-slot steps s served: gathered straight into
// their slot, copied into one whole, and the body bytes of gathered steps
// that were copied all the same (columns not gathered into the slot).
func SlotSteps(s *Service) (gathered, copied, recopied int64) {
	return s.slotSteps.gathered.Load(), s.slotSteps.copied.Load(), s.slotSteps.recopied.Load()
}

// OpenCalls returns the calls the Service's call limit counts as open.
func OpenCalls(s *Service) int64 { return s.calls.open.Load() }

// ConnBytes is what ReceivingBytes counts of each connection.
const ConnBytes = connBytes

// ServiceDesc is the service s registers (every method a stream).
func ServiceDesc(s *Service) *grpc.ServiceDesc { return s.serviceDesc() }
