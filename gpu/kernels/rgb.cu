// rgb.cu - NV12 / P016 (4:2:0, one or two bytes a sample) to packed RGB uint8, the
// conversion of python/weft/_video.py (to_rgb) and gpu/color.go (YUV420ToRGB), bit for bit:
//   R = (ty[Y] + rv[V]) >> 5,  G = (ty[Y] + gu[U] + gv[V]) >> 5,  B = (ty[Y] + bu[U]) >> 5,
// each clamped to 0..255, chroma replicated (sample (x/2, y/2)). The five int16 tables
// (ty, rv, gu, gv, bu; n = 1 << bits entries each) are built by gpu.Tables for the stream's
// matrix (BT.601/709/...), range (limited/full) and bit depth, and live in device memory.
// P016 holds the sample in the high bits: shift = 16 - bits.
//
// Resize (a window's size=(H, W)): python/weft/_video.py's resize and gpu/resize.go's ResizeRGB,
// separable antialiased bilinear with the float32 weights of gpu.ResizeWeights, in two kernels:
//   weft_yuv420_to_rgb_vresize: the conversion above fused with the vertical pass, into a float32
//     intermediate [out_h][width][3] (device scratch);
//   weft_rgb_hresize: the horizontal pass of the intermediate into the destination, rounded half
//     to even and clamped to 0..255.
// Each output is the sum of its terms in input order, every product and sum rounded to float32
// (mul.rn / add.rn: never contracted into a fused multiply-add), the statements of ResizeRGB, so
// the GPU, the fake driver and the Go reference agree exactly. A filter in device memory is
// out int32 starts, out int32 counts, then out*taps float32 weights (ResizeFilter.deviceBytes).
//
// Normalisation (a window's normalize=(mean, std), dtype=): the last write of weft_yuv420_to_rgb
// and weft_rgb_hresize, out_kind 1 (float32), 2 (float16) or 3 (bfloat16) instead of 0 (uint8),
// takes each uint8 value x just computed in registers to y = (float(x) / 255 - mean[c]) / std[c]
// (div.rn, sub as add.rn of the negation: IEEE float32, no fused multiply-add), then float16 or
// bfloat16 by round to nearest even in integer operations (f32_to_f16, f32_to_bf16: no sm_80
// conversion instruction), the statements of pixnorm.Normalize.RGB. dst_pitch is in bytes.
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
#define WG_FMUL(a, b) __nvvm_mul_rn_f(a, b)
#define WG_FADD(a, b) __nvvm_add_rn_f(a, b)
#define WG_RINT(a) __nvvm_f2i_rn(a)
#define WG_FDIV(a, b) __nvvm_div_rn_f(a, b)
#define WG_BITS(f) __nvvm_bitcast_f2i(f)
// (clang contracts even these into fma.rn.f32 without -ffp-contract=off, which mkptx.sh passes)
#else
#define WG_TX threadIdx.x
#define WG_TY threadIdx.y
#define WG_BX blockIdx.x
#define WG_BY blockIdx.y
#define WG_DX blockDim.x
#define WG_DY blockDim.y
#define WG_FMUL(a, b) __fmul_rn(a, b)
#define WG_FADD(a, b) __fadd_rn(a, b)
#define WG_RINT(a) __float2int_rn(a)
#define WG_FDIV(a, b) __fdiv_rn(a, b)
#define WG_BITS(f) __float_as_int(f)
#endif

static __attribute__((device)) inline unsigned char clamp8(int v)
{
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

// f32_to_f16 is f as an IEEE half, rounded to nearest even (pixnorm.Float16Bits).
static __attribute__((device)) inline unsigned short f32_to_f16(float f)
{
    unsigned int x = (unsigned int)WG_BITS(f);
    unsigned int sign = (x >> 16) & 0x8000u;
    unsigned int a = x & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* 65520 and above: inf */
        return (unsigned short)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* a normal half */
        unsigned int r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (unsigned short)(sign | (r >> 13));
    }
    if (a <= 0x33000000u) /* up to 2^-25: 0 */
        return (unsigned short)sign;
    unsigned int e = a >> 23; /* a subnormal half */
    unsigned int m = (a & 0x7fffffu) | 0x800000u;
    unsigned int shift = 126u - e;
    unsigned int q = m >> shift;
    unsigned int rem = m & ((1u << shift) - 1u);
    unsigned int half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return (unsigned short)(sign | q);
}

// f32_to_bf16 is f's top 16 bits rounded to nearest even; a NaN stays a NaN (pixnorm.BFloat16Bits).
static __attribute__((device)) inline unsigned short f32_to_bf16(float f)
{
    unsigned int x = (unsigned int)WG_BITS(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((x >> 16) | 0x40u);
    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// put writes pixel x's values o[0..2] into row (dst_pitch bytes per row): uint8, or normalised.
static __attribute__((device)) inline void put(unsigned char *row, unsigned int x, const unsigned char *o,
                                               unsigned int kind, float m0, float m1, float m2, float s0, float s1,
                                               float s2)
{
    if (kind == 0) {
        row[3 * x] = o[0];
        row[3 * x + 1] = o[1];
        row[3 * x + 2] = o[2];
        return;
    }
    float m[3] = {m0, m1, m2}, s[3] = {s0, s1, s2};
    for (int c = 0; c < 3; c++) {
        float q = WG_FDIV((float)o[c], 255.0f);
        float y = WG_FDIV(WG_FADD(q, -m[c]), s[c]);
        if (kind == 1)
            ((float *)row)[3 * x + c] = y;
        else if (kind == 2)
            ((unsigned short *)row)[3 * x + c] = f32_to_f16(y);
        else
            ((unsigned short *)row)[3 * x + c] = f32_to_bf16(y);
    }
}

// rgb_at converts the sample at (x, y) of the 4:2:0 picture into o[0..2].
static __attribute__((device)) inline void rgb_at(const unsigned char *luma, const unsigned char *chroma,
                                                  unsigned int pitch, unsigned int bps, unsigned int shift,
                                                  const short *tables, unsigned int n, unsigned int x, unsigned int y,
                                                  unsigned char *o)
{
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
    o[0] = clamp8((ty + tables[n + V]) >> 5);
    o[1] = clamp8((ty + tables[2 * n + U] + tables[3 * n + V]) >> 5);
    o[2] = clamp8((ty + tables[4 * n + U]) >> 5);
}

extern "C" __global__ void weft_yuv420_to_rgb(const unsigned char *luma, const unsigned char *chroma,
                                              unsigned int pitch, unsigned int bps, unsigned int shift,
                                              unsigned char *dst, unsigned int dst_pitch,
                                              unsigned int width, unsigned int height,
                                              const short *tables, unsigned int n, unsigned int kind,
                                              float m0, float m1, float m2, float s0, float s1, float s2)
{
    unsigned int x = WG_BX * WG_DX + WG_TX;
    unsigned int y = WG_BY * WG_DY + WG_TY;
    if (x >= width || y >= height)
        return;
    unsigned char o[3];
    rgb_at(luma, chroma, pitch, bps, shift, tables, n, x, y, o);
    put(dst + (unsigned long long)y * dst_pitch, x, o, kind, m0, m1, m2, s0, s1, s2);
}

// One thread per (x, oy) of the intermediate: tmp[oy][x][c] = sum_k w[k] * rgb(x, start + k)[c].
extern "C" __global__ void weft_yuv420_to_rgb_vresize(const unsigned char *luma, const unsigned char *chroma,
                                                      unsigned int pitch, unsigned int bps, unsigned int shift,
                                                      const short *tables, unsigned int n,
                                                      float *tmp, unsigned int width, unsigned int out_h,
                                                      const int *filter, unsigned int taps)
{
    unsigned int x = WG_BX * WG_DX + WG_TX;
    unsigned int oy = WG_BY * WG_DY + WG_TY;
    if (x >= width || oy >= out_h)
        return;
    int start = filter[oy], count = filter[out_h + oy];
    const float *w = (const float *)(filter + 2 * out_h) + (unsigned long long)oy * taps;
    float r = 0.0f, g = 0.0f, b = 0.0f;
    unsigned char o[3];
    for (int k = 0; k < count; k++) {
        rgb_at(luma, chroma, pitch, bps, shift, tables, n, x, (unsigned int)(start + k), o);
        r = WG_FADD(r, WG_FMUL(w[k], (float)o[0]));
        g = WG_FADD(g, WG_FMUL(w[k], (float)o[1]));
        b = WG_FADD(b, WG_FMUL(w[k], (float)o[2]));
    }
    float *t = tmp + ((unsigned long long)oy * width + x) * 3;
    t[0] = r;
    t[1] = g;
    t[2] = b;
}

// One thread per (ox, oy) of the destination: dst[oy][ox][c] = rint(sum_k tmp[oy][start + k][c] * w[k]),
// normalised when kind is not 0.
extern "C" __global__ void weft_rgb_hresize(const float *tmp, unsigned int width,
                                            unsigned char *dst, unsigned int dst_pitch,
                                            unsigned int out_w, unsigned int out_h,
                                            const int *filter, unsigned int taps, unsigned int kind,
                                            float m0, float m1, float m2, float s0, float s1, float s2)
{
    unsigned int ox = WG_BX * WG_DX + WG_TX;
    unsigned int oy = WG_BY * WG_DY + WG_TY;
    if (ox >= out_w || oy >= out_h)
        return;
    int start = filter[ox], count = filter[out_w + ox];
    const float *w = (const float *)(filter + 2 * out_w) + (unsigned long long)ox * taps;
    const float *row = tmp + (unsigned long long)oy * width * 3;
    float r = 0.0f, g = 0.0f, b = 0.0f;
    for (int k = 0; k < count; k++) {
        const float *p = row + (unsigned long long)(start + k) * 3;
        r = WG_FADD(r, WG_FMUL(p[0], w[k]));
        g = WG_FADD(g, WG_FMUL(p[1], w[k]));
        b = WG_FADD(b, WG_FMUL(p[2], w[k]));
    }
    unsigned char o[3];
    o[0] = clamp8(WG_RINT(r));
    o[1] = clamp8(WG_RINT(g));
    o[2] = clamp8(WG_RINT(b));
    put(dst + (unsigned long long)oy * dst_pitch, ox, o, kind, m0, m1, m2, s0, s1, s2);
}
