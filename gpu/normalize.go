package gpu

import "github.com/weftdata/weft/video/pixnorm"

// outKind is dtype t's number in the kernels' out_kind argument (rgb.cu):
// 0 uint8, 1 float32, 2 float16, 3 bfloat16.
func outKind(t pixnorm.DType) uint32 {
	switch t {
	case pixnorm.Float32:
		return 1
	case pixnorm.Float16:
		return 2
	case pixnorm.BFloat16:
		return 3
	}
	return 0
}
