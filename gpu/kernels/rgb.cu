// rgb.cu - NV12 / P016 (4:2:0, one or two bytes a sample) to packed RGB uint8, the
// conversion of python/weft/_video.py (to_rgb) and gpu/color.go (YUV420ToRGB), bit for bit:
//   R = (ty[Y] + rv[V]) >> 5,  G = (ty[Y] + gu[U] + gv[V]) >> 5,  B = (ty[Y] + bu[U]) >> 5,
// each clamped to 0..255, chroma replicated (sample (x/2, y/2)). The five int16 tables
// (ty, rv, gu, gv, bu; n = 1 << bits entries each) are built by gpu.Tables for the stream's
// matrix (BT.601/709/...), range (limited/full) and bit depth, and live in device memory.
// P016 holds the sample in the high bits: shift = 16 - bits.
//
// Built to PTX by `make ptx` (gpu/kernels/Makefile.ptx: nvcc, or clang without any CUDA
// install through -nocudainc); the PTX is embedded in the binary (gpu/kernels/rgb.ptx) and
// JIT-compiled by the driver (cuModuleLoadData). Do not edit the PTX by hand.
#if defined(__clang__) && !defined(__CUDACC_VER_MAJOR__)
// clang -nocudainc: no CUDA headers, so spell the builtins ourselves.
#define __global__ __attribute__((global))
#define WG_TX __nvvm_read_ptx_sreg_tid_x()
#define WG_TY __nvvm_read_ptx_sreg_tid_y()
#define WG_BX __nvvm_read_ptx_sreg_ctaid_x()
#define WG_BY __nvvm_read_ptx_sreg_ctaid_y()
#define WG_DX __nvvm_read_ptx_sreg_ntid_x()
#define WG_DY __nvvm_read_ptx_sreg_ntid_y()
#else
#define WG_TX threadIdx.x
#define WG_TY threadIdx.y
#define WG_BX blockIdx.x
#define WG_BY blockIdx.y
#define WG_DX blockDim.x
#define WG_DY blockDim.y
#endif

static __attribute__((device)) inline unsigned char clamp8(int v)
{
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

extern "C" __global__ void weft_yuv420_to_rgb(const unsigned char *luma, const unsigned char *chroma,
                                              unsigned int pitch, unsigned int bps, unsigned int shift,
                                              unsigned char *dst, unsigned int dst_pitch,
                                              unsigned int width, unsigned int height,
                                              const short *tables, unsigned int n)
{
    unsigned int x = WG_BX * WG_DX + WG_TX;
    unsigned int y = WG_BY * WG_DY + WG_TY;
    if (x >= width || y >= height)
        return;
    unsigned int Y, U, V;
    const unsigned char *c = chroma + (unsigned long long)(y >> 1) * pitch;
    if (bps == 1) {
        Y = luma[(unsigned long long)y * pitch + x];
        U = c[(x >> 1) * 2];
        V = c[(x >> 1) * 2 + 1];
    } else {
        Y = (unsigned int)(*(const unsigned short *)(luma + (unsigned long long)y * pitch + 2 * x)) >> shift;
        const unsigned short *c16 = (const unsigned short *)c;
        U = (unsigned int)c16[(x >> 1) * 2] >> shift;
        V = (unsigned int)c16[(x >> 1) * 2 + 1] >> shift;
    }
    if (Y >= n) Y = n - 1;
    if (U >= n) U = n - 1;
    if (V >= n) V = n - 1;
    int ty = tables[Y];
    unsigned char *o = dst + (unsigned long long)y * dst_pitch + 3 * x;
    o[0] = clamp8((ty + tables[n + V]) >> 5);
    o[1] = clamp8((ty + tables[2 * n + U] + tables[3 * n + V]) >> 5);
    o[2] = clamp8((ty + tables[4 * n + U]) >> 5);
}
