package video

import (
	"fmt"

	"github.com/weftdata/weft/errdefs"
)

// Sentinels. Each wraps an errdefs kind; returned errors wrap one of these
// with context naming the file's part, the frame or the time at fault.
var (
	// ErrMalformed: the bytes are not a readable MP4 (truncated, a box that
	// overruns its parent, a sample table that contradicts itself). Re-export
	// the file (e.g. `ffmpeg -i in -c copy out.mp4`) or check the upload.
	ErrMalformed = fmt.Errorf("malformed mp4: %w", errdefs.ErrInvalidArgument)
	// ErrNoVideoTrack: the MP4 has no track with a video handler.
	ErrNoVideoTrack = fmt.Errorf("mp4 has no video track: %w", errdefs.ErrInvalidArgument)
	// ErrUnsupportedCodec: the video track's codec or layout is not one this
	// package indexes (H.264 avc1/avc3, HEVC hvc1/hev1, AV1 av01; a single
	// sample description; no fragments).
	ErrUnsupportedCodec = fmt.Errorf("unsupported video: %w", errdefs.ErrInvalidArgument)
	// ErrNoFrame: no frame has a presentation time within tolerance of the
	// asked time.
	ErrNoFrame = fmt.Errorf("no frame at that time: %w", errdefs.ErrInvalidArgument)
	// ErrFrameRange: a display-order frame index outside [0, Len()).
	ErrFrameRange = fmt.Errorf("frame index out of range: %w", errdefs.ErrInvalidArgument)
)
