package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/weftdata/weft/video"
)

// annexbMain is `weftgpu annexb IN.mp4 OUT`: the clip's H.264/HEVC video as
// an Annex B stream with the parameter sets before every sync sample, so
// that it loops (nvdec_probe's bench concatenates it with itself). The
// check makes it on the GPU machine from the carried MP4 (no ffmpeg there,
// and one copy of the clip less to carry).
func annexbMain(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: weftgpu annexb IN.mp4 OUT")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	x, err := index(args[0])
	if err != nil {
		return err
	}
	out, err := annexB(x, b)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	return os.WriteFile(args[1], out, 0o644)
}

// annexB converts the samples of x (file b), in decode order.
func annexB(x *video.Index, b []byte) ([]byte, error) {
	cfg := x.Config
	if cfg.Codec != video.H264 && cfg.Codec != video.HEVC {
		return nil, fmt.Errorf("codec %s has no Annex B form", cfg.Codec)
	}
	ls := cfg.NALLengthSize
	if ls < 1 || ls > 4 {
		return nil, fmt.Errorf("NAL length size %d", ls)
	}
	start := []byte{0, 0, 0, 1}
	var out []byte
	for i, s := range x.Samples {
		if s.Offset < 0 || s.Size < 0 || s.Offset+s.Size > int64(len(b)) {
			return nil, fmt.Errorf("sample %d outside the file", i)
		}
		u := b[s.Offset : s.Offset+s.Size]
		if s.Key {
			for _, ps := range cfg.ParameterSets {
				out = append(append(out, start...), ps...)
			}
		}
		for p := 0; p < len(u); {
			if p+ls > len(u) {
				return nil, fmt.Errorf("sample %d: truncated NAL length", i)
			}
			l := 0
			for _, c := range u[p : p+ls] {
				l = l<<8 | int(c)
			}
			p += ls
			if l > len(u)-p {
				return nil, fmt.Errorf("sample %d: NAL of %d bytes overruns the sample", i, l)
			}
			out = append(append(out, start...), u[p:p+l]...)
			p += l
		}
	}
	return out, nil
}
