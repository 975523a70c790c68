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

// The two row shapes of the training-mix benchmarks (bench/mix_test.go,
// weftbench; bench/harness/data.py writes the same): small rows of 144 B,
// and large rows whose image is a 100 KiB binary value.
var (
	SmallSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "features", Type: arrow.FixedSizeListOf(32, arrow.PrimitiveTypes.Float32)},
		{Name: "label", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	LargeSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "image", Type: arrow.BinaryTypes.Binary},
	}, nil)
)
