package episodes

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/weftdata/weft/errdefs"
)

// FuzzParseSpecs feeds hostile window specs to ParseRows and ParseVideo.
// Neither may panic; a refusal wraps ErrBadSpec (InvalidArgument); an
// accepted spec keeps the limits, and its canonical form is valid JSON that
// parses back to the same spec and the same canonical bytes (run ids hash
// it, so it must be a fixed point).
func FuzzParseSpecs(f *testing.F) {
	for _, s := range []string{
		// From TestCanonical and TestBadInputs.
		`{"offsets":[0,1,2]}`,
		`{"pad":true,"offsets":[0,1.0,2e0]}`,
		`{"offsets":[-1],"pad":false}`,
		`{"frames":[0,1,2]}`,
		`{"size":[224,224.0],"pad":true,"frames":[-1.0,0]}`,
		`{"seconds":[-0.2,-0.1,0.0,1e-1,-0.0],"tolerance":0.010}`,
		`{"seconds":[0.30000000000000004],"pad":false}`,
		`{"offsets":[0,1,2,3,4,5],"pad":false}`,
		`{"frames":[-3,0,2],"pad":false}`,
		`{"frames":[0],"seconds":[0]}`,
		`{}`,
		``,
		`{"offsets":[1],"stride":2}`,
		`{"offsets":[0.5]}`,
		`{"frames":[0],"size":[0,4]}`,
		`{"frames":[0],"tolerance":0.1}`,
		`{"seconds":[0.02],"tolerance":0.001}`,
		`{"pad": true, "seconds": [-0.1, 0.0], "size": [96, 96]}`,
		`{"frames":[0],"normalize":{"mean":[0.485,0.456,0.406],"std":[0.229,0.224,0.225]},"dtype":"float16"}`,
		`{"frames":[0],"normalize":{"mean":[0,0,0],"std":[1,1,0]}}`,
		`{"frames":[0],"normalize":{"mean":[0,-0.0,3.4028235e38],"std":[1e-45,1,1]},"dtype":"bfloat16"}`,
		`{"frames":[0],"normalize":{"mean":[0,0],"std":[1,1,1]}}`,
		`{"frames":[0],"dtype":"float32"}`,
		`{"frames":[0],"normalize":null,"dtype":null}`,
		// Edges.
		`{"offsets":[1073741824,-1073741824]}`,
		`{"offsets":[1e400]}`,
		`{"seconds":[86400,-86400,5e-324]}`,
		`{"seconds":[1e-320],"tolerance":3600}`,
		`{"frames":[9223372036854775807]}`,
		`{"frames":[-0]}`,
		`{"offsets":[1]} {}`,
		`[1]`,
		`{"offsets":null}`,
	} {
		f.Add(false, s)
		f.Add(true, s)
	}
	f.Fuzz(func(t *testing.T, video bool, spec string) {
		if video {
			s, err := ParseVideo([]byte(spec))
			if err != nil {
				checkSpecErr(t, spec, err)
				return
			}
			checkVideoSpec(t, spec, s)
			c := s.Canonical()
			back, err := ParseVideo(c)
			if err != nil {
				t.Fatalf("%s: canonical %s does not parse: %v", spec, c, err)
			}
			if !reflect.DeepEqual(back, s) || string(back.Canonical()) != string(c) {
				t.Fatalf("%s: canonical %s parses to %+v (canonical %s), not %+v", spec, c, back, back.Canonical(), s)
			}
			k, err := (&videoKind{}).Canonical(json.RawMessage(spec))
			if err != nil || string(k) != string(c) {
				t.Fatalf("%s: videoKind.Canonical = %s, %v; want %s", spec, k, err, c)
			}
			return
		}
		s, err := ParseRows([]byte(spec))
		if err != nil {
			checkSpecErr(t, spec, err)
			return
		}
		if len(s.Offsets) == 0 || len(s.Offsets) > maxOffsets {
			t.Fatalf("%s: %d offsets", spec, len(s.Offsets))
		}
		for _, o := range s.Offsets {
			if o < -maxOffset || o > maxOffset {
				t.Fatalf("%s: offset %d out of range", spec, o)
			}
		}
		c := s.Canonical()
		back, err := ParseRows(c)
		if err != nil {
			t.Fatalf("%s: canonical %s does not parse: %v", spec, c, err)
		}
		if !reflect.DeepEqual(back, s) || string(back.Canonical()) != string(c) {
			t.Fatalf("%s: canonical %s parses to %+v, not %+v", spec, c, back, s)
		}
		k, err := (&rowsKind{}).Canonical(json.RawMessage(spec))
		if err != nil || string(k) != string(c) {
			t.Fatalf("%s: rowsKind.Canonical = %s, %v; want %s", spec, k, err, c)
		}
	})
}

func checkSpecErr(t *testing.T, spec string, err error) {
	t.Helper()
	if !errors.Is(err, ErrBadSpec) || !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("%s: error is not ErrBadSpec: %v", spec, err)
	}
}

func checkVideoSpec(t *testing.T, spec string, s VideoSpec) {
	t.Helper()
	if (s.Frames == nil) == (s.Seconds == nil) || s.Len() == 0 || s.Len() > maxOffsets {
		t.Fatalf("%s: %d frames, %d seconds", spec, len(s.Frames), len(s.Seconds))
	}
	for _, o := range s.Frames {
		if o < -maxOffset || o > maxOffset {
			t.Fatalf("%s: frame offset %d out of range", spec, o)
		}
	}
	for _, x := range s.Seconds {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > maxSeconds || math.Signbit(x) && x == 0 {
			t.Fatalf("%s: seconds offset %v", spec, x)
		}
	}
	if s.Size != nil && (len(s.Size) != 2 || s.Size[0] < 1 || s.Size[1] < 1 || s.Size[0] > maxSize || s.Size[1] > maxSize) {
		t.Fatalf("%s: size %v", spec, s.Size)
	}
	if n := s.Normalize; n != nil {
		m32, s32 := n.Mean32(), n.Std32()
		for c := range 3 {
			if math.IsInf(float64(m32[c]), 0) || math.IsNaN(float64(m32[c])) || !(s32[c] > 0) || math.IsInf(float64(s32[c]), 0) || math.Signbit(n.Mean[c]) && n.Mean[c] == 0 {
				t.Fatalf("%s: normalize %+v", spec, *n)
			}
		}
		if !n.DType.Normalized() {
			t.Fatalf("%s: dtype %q", spec, n.DType)
		}
	}
	if s.Tolerance < 0 || s.Tolerance > maxTolerance || s.Tolerance != 0 && s.Frames != nil || math.IsNaN(s.Tolerance) {
		t.Fatalf("%s: tolerance %v", spec, s.Tolerance)
	}
}
