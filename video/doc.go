// Package video indexes the video track of an MP4 and plans which of its
// access units a window of frames needs. It decides what to read and
// decode, never decodes: CPU clients (PyAV) and NVDEC consume the same
// Plan.
//
// Read parses an MP4 through an io.ReaderAt: it walks the top-level box
// headers to the moov box, at the start (faststart) or the end of the file,
// reads that box whole (bounded) and nothing of mdat. It picks the first
// track with a video handler, so audio and other tracks may interleave.
// Fragmented files, several sample descriptions and codecs other than
// H.264 (avc1/avc3), HEVC (hvc1/hev1) and AV1 (av01) are refused with
// ErrUnsupportedCodec; unreadable or truncated files with ErrMalformed;
// files without video with ErrNoVideoTrack. All wrap
// errdefs.ErrInvalidArgument and say what to do.
//
// The Index holds, per sample in decode order, its byte range, DTS,
// composition offset, PTS, keyframe flag and whether it is an open-GOP
// leading frame, plus the decoder configuration (the avcC/hvcC/av1C box as
// stored, codec string, size, bit depth). Times are in the track
// timescale:
//
//	PTS = DTS + composition offset − media time of the first non-empty edit
//	      + duration of any empty edits before it
//
// which is the timestamp ffmpeg reports. Frames are addressed by display
// position (samples sorted by PTS). FrameAt resolves a time to a frame by
// searching the PTS table within a tolerance, so variable frame rates and
// edit lists are exact; nothing rounds t·fps.
//
// Plan(frames) returns, for display positions already clamped by the
// caller, the decode-order sample range [Start, End) to feed a decoder
// after the configuration, its byte ranges coalesced where samples are
// adjacent in the file, the frames the decoder outputs and which of them
// to keep. Start is the keyframe at or before every needed frame in decode
// order — the previous keyframe for an open-GOP leading frame — and End
// follows the last needed frame in decode order (B-frames: references
// precede a frame in decode order even when they follow it in display
// order). The tests check every plan by decoding only the planned bytes
// with ffmpeg and comparing the kept frames with ffmpeg's decode of the
// whole file. PlanWindows plans several windows of one video at once,
// merging those whose ranges overlap so a shared GOP is read and decoded
// once.
//
// ConfigFromBox rebuilds a Config from what a step's video window carries
// for a segment (the codec, the configuration box's body, the size), with
// the parser Read uses for the box, so that it equals the Index's Config
// but for SampleEntry and CodecString; GPU delivery decodes with it.
// WalkOBUs checks the OBUs of an AV1 temporal unit or configOBUs and gives
// every OBU a size, as NVDEC's parser wants them.
//
// The bytes are hostile until checked (uploads from the network). Read
// checks every count, offset and time before using it and bounds its work
// by the input: the moov is at most 256 MiB and is looked for among the
// first 4096 top-level boxes; a track has at most one sample per moov
// byte; every sample lies inside the file; times and edits stay within
// 2^29 seconds, so no sum overflows; mp4ff's parsers are called under
// recover. ConfigFromBox and WalkOBUs check a body or unit the same way
// (every length within it) and fail with ErrMalformed. As a second line of defence Read turns any panic into an error
// wrapping ErrMalformed (FuzzRead treats one as a bug). Plan refuses a
// decode of more than MaxPlanSamples samples (ErrUnsupportedCodec), so a
// file with one keyframe and millions of frames cannot make a window
// allocate for all of them; its cost is linear in the samples it plans.
//
// An Index is immutable and safe for concurrent use.
package video
