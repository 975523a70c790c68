// Package pixnorm is the one definition of a video window's normalisation
// (python weft.Video(normalize=, dtype=); docs/python.md, "Video
// windows"): the Normalize type that episodes parses and carries on the
// wire and that gpu's kernels apply, and the Go reference of its
// arithmetic.
//
// The rule: each RGB value x (uint8, after the resize) of channel c
// becomes
//
//	y = (float32(x)/255 - mean32[c]) / std32[c]
//
// in IEEE float32, one rounding per operation (no fused multiply-add),
// where mean32 and std32 are Normalize's Mean and Std rounded to float32;
// then y is rounded to the DType to nearest even: Float32 as is, Float16
// an IEEE binary16 (beyond 65504 + half an ulp: inf), BFloat16 the top 16
// bits of the float32 (overflow: inf). A NaN stays a quiet NaN.
//
// Other languages implement the same rule and are tested equal to this
// package bit for bit: gpu/kernels/rgb.cu (f32_to_f16, f32_to_bf16), the
// fake driver's C (gpu/testdata/fakedriver) and python/weft/_video.py
// (normalize, bfloat16_bits).
package pixnorm
