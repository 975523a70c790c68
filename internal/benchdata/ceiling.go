package benchdata

import (
	"github.com/apache/arrow-go/v18/arrow"
	arrowflight "github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Ceiling is a Flight service that answers every DoGet by resending one
// prebuilt batch Count times: arrow-go Flight with no Weft code, the
// loopback ceiling of any Flight loader.
type Ceiling struct {
	arrowflight.BaseFlightServer
	Rec   arrow.RecordBatch
	Count int
}

func (s *Ceiling) DoGet(_ *arrowflight.Ticket, stream arrowflight.FlightService_DoGetServer) error {
	w := arrowflight.NewRecordWriter(stream, ipc.WithSchema(s.Rec.Schema()))
	defer w.Close()
	for range s.Count {
		if err := w.Write(s.Rec); err != nil {
			return err
		}
	}
	return nil
}
