// Package gpu is flightd's side of GPU delivery (issue 15): NVDEC decoding of
// video windows and the RGB conversion into device memory, with the NVIDIA
// driver loaded at run time.
//
// Nothing links against CUDA. With cgo (linux), Open dlopens libcuda.so.1 and
// libnvcuvid.so.1 and resolves every entry point with dlsym; the types come
// from the MIT-licensed ffnvcodec headers vendored in include/ffnvcodec (see
// its LICENSE). Without a GPU, without the driver, or in a binary built with
// CGO_ENABLED=0, Open returns an error wrapping ErrUnavailable that says why,
// and the server keeps to the CPU path (the client decodes, issue 13).
//
// Decoding: a Segment is one video.Plan's access units in decode order,
// from the keyframe the wanted frames need (a GOP shared by several
// windows is one plan, so it is decoded once), with its video.Config: the
// index's, or the one video.ConfigFromBox rebuilds from the configuration
// box body a step carries (the video package owns that parsing). H.264/HEVC
// NAL units are made Annex-B; AV1 temporal units of OBUs are fed as they
// are after the av1C configOBUs, every OBU checked by video.WalkOBUs, whose
// errors come back wrapped in ErrInvalidSegment. Device.Decode feeds the
// units to an NVDEC parser and a decoder taken from a pool keyed by format
// (codec, coded size, bit depth): decoders are reused across segments and
// windows. Only frames whose PTS is wanted are mapped; the others are
// decoded (they are references) and dropped. Before the first decode of a format, cuvidGetDecoderCaps is asked:
// a codec, depth or size this GPU's NVDEC lacks gives ErrUnsupported, and the
// caller takes the CPU path (and logs it).
//
// Colour: the kernel in kernels/rgb.cu converts NV12 (P016 for 10-bit) to
// packed RGB uint8 with five int16 lookup tables built by Tables, the same
// fixed-point rule as python/weft/_video.py's to_rgb; YUV420ToRGB is the Go
// reference (the oracle of the GPU tests). The kernel ships as PTX
// (kernels/rgb.ptx, embedded, JIT-compiled by the driver with
// cuModuleLoadData); `make ptx` regenerates it with nvcc or clang.
//
// Resize: with DecodeOptions naming another size, two more kernels of
// rgb.cu resize each frame on the device as python's resize does
// (separable antialiased bilinear): ResizeWeights is python's _weights bit
// for bit, ResizeRGB the reference of the kernels' float32 arithmetic (no
// fused multiply-add), within 1 LSB of python's numpy matmul.
//
// Normalisation: with DecodeOptions.Normalize, the last kernel write (the
// conversion's, or the resize's horizontal pass) makes each uint8 value a
// normalised float32, float16 or bfloat16 (package video/pixnorm's rule:
// float32 division and subtraction, then round to nearest even in integer
// operations); pixnorm's Normalize.RGB is its reference. Descriptors
// (DeviceSlot) say the DType; frames take DType.Size() bytes per value.
//
// Tests run the whole NVDEC path on the CPU against testdata/fakedriver, a C
// stand-in for both libraries that decodes with libavcodec. What only a real
// GPU can check runs in `make gpu-check` (docs/gpu.md).
package gpu
