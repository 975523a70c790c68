//go:build cgo && linux

/* native.c - see native.h. Everything here runs with the device's primary context pushed
 * for the duration of one call and popped before returning to Go (goroutines move between
 * OS threads between cgo calls, and a CUDA context is current per thread). */
#define _GNU_SOURCE
#include "native.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOADSYM(lib, field, sym, required)                                              \
    do {                                                                               \
        *(void **)(&d->field) = dlsym(d->lib, sym);                                    \
        if (!d->field && (required)) {                                                 \
            snprintf(err, errlen, "%s lacks %s", libname, sym);                       \
            return missing;                                                            \
        }                                                                              \
    } while (0)

static int load_cuda(wg_driver *d, char *err, size_t errlen)
{
    int missing = WG_CUDA_SYMBOL;
    const char *libname = "libcuda";
    LOADSYM(hcuda, cuInit, "cuInit", 1);
    LOADSYM(hcuda, cuDriverGetVersion, "cuDriverGetVersion", 1);
    LOADSYM(hcuda, cuDeviceGetCount, "cuDeviceGetCount", 1);
    LOADSYM(hcuda, cuDeviceGet, "cuDeviceGet", 1);
    LOADSYM(hcuda, cuDeviceGetName, "cuDeviceGetName", 1);
    LOADSYM(hcuda, cuDeviceGetUuid, "cuDeviceGetUuid", 0);
    LOADSYM(hcuda, cuDeviceGetAttribute, "cuDeviceGetAttribute", 1);
    LOADSYM(hcuda, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1);
    LOADSYM(hcuda, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 1);
    LOADSYM(hcuda, cuCtxPushCurrent, "cuCtxPushCurrent_v2", 1);
    LOADSYM(hcuda, cuCtxPopCurrent, "cuCtxPopCurrent_v2", 1);
    LOADSYM(hcuda, cuMemGetInfo, "cuMemGetInfo_v2", 1);
    LOADSYM(hcuda, cuMemAlloc, "cuMemAlloc_v2", 1);
    LOADSYM(hcuda, cuMemFree, "cuMemFree_v2", 1);
    LOADSYM(hcuda, cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", 1);
    LOADSYM(hcuda, cuMemcpyHtoD, "cuMemcpyHtoD_v2", 1);
    LOADSYM(hcuda, cuMemcpyDtoH, "cuMemcpyDtoH_v2", 1);
    LOADSYM(hcuda, cuStreamCreate, "cuStreamCreate", 1);
    LOADSYM(hcuda, cuStreamSynchronize, "cuStreamSynchronize", 1);
    LOADSYM(hcuda, cuStreamDestroy, "cuStreamDestroy_v2", 1);
    LOADSYM(hcuda, cuEventCreate, "cuEventCreate", 1);
    LOADSYM(hcuda, cuEventRecord, "cuEventRecord", 1);
    LOADSYM(hcuda, cuEventDestroy, "cuEventDestroy_v2", 1);
    LOADSYM(hcuda, cuModuleLoadData, "cuModuleLoadData", 1);
    LOADSYM(hcuda, cuModuleUnload, "cuModuleUnload", 1);
    LOADSYM(hcuda, cuModuleGetFunction, "cuModuleGetFunction", 1);
    LOADSYM(hcuda, cuLaunchKernel, "cuLaunchKernel", 1);
    LOADSYM(hcuda, cuGetErrorName, "cuGetErrorName", 0);
    LOADSYM(hcuda, cuIpcGetMemHandle, "cuIpcGetMemHandle", 0);
    LOADSYM(hcuda, cuIpcGetEventHandle, "cuIpcGetEventHandle", 0);
    LOADSYM(hcuda, cuIpcOpenEventHandle, "cuIpcOpenEventHandle", 0);
    LOADSYM(hcuda, cuEventQuery, "cuEventQuery", 1);
    return WG_OK;
}

static int load_cuvid(wg_driver *d, char *err, size_t errlen)
{
    int missing = WG_CUVID_SYMBOL;
    const char *libname = "libnvcuvid";
    LOADSYM(hcuvid, cuvidGetDecoderCaps, "cuvidGetDecoderCaps", 1);
    LOADSYM(hcuvid, cuvidCreateDecoder, "cuvidCreateDecoder", 1);
    LOADSYM(hcuvid, cuvidDestroyDecoder, "cuvidDestroyDecoder", 1);
    LOADSYM(hcuvid, cuvidDecodePicture, "cuvidDecodePicture", 1);
    LOADSYM(hcuvid, cuvidMapVideoFrame64, "cuvidMapVideoFrame64", 1);
    LOADSYM(hcuvid, cuvidUnmapVideoFrame64, "cuvidUnmapVideoFrame64", 1);
    LOADSYM(hcuvid, cuvidCtxLockCreate, "cuvidCtxLockCreate", 1);
    LOADSYM(hcuvid, cuvidCtxLockDestroy, "cuvidCtxLockDestroy", 1);
    LOADSYM(hcuvid, cuvidCreateVideoParser, "cuvidCreateVideoParser", 1);
    LOADSYM(hcuvid, cuvidParseVideoData, "cuvidParseVideoData", 1);
    LOADSYM(hcuvid, cuvidDestroyVideoParser, "cuvidDestroyVideoParser", 1);
    return WG_OK;
}

const char *wg_err_name(wg_driver *d, CUresult r)
{
    const char *s = NULL;
    if (d->cuGetErrorName && d->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA_ERROR_UNKNOWN_CODE";
}

int wg_open(wg_driver *d, const char *cuda_path, const char *cuvid_path, int device, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    err[0] = 0;
    d->hcuda = dlopen(cuda_path, RTLD_NOW | RTLD_LOCAL);
    if (!d->hcuda) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        return WG_NO_LIBCUDA;
    }
    int rc = load_cuda(d, err, errlen);
    if (rc) return rc;
    CUresult r = d->cuInit(0);
    if (r) {
        snprintf(err, errlen, "cuInit: %s (%d)", wg_err_name(d, r), (int)r);
        return WG_CUINIT;
    }
    d->cuDriverGetVersion(&d->driver_version);
    int n = 0;
    if ((r = d->cuDeviceGetCount(&n)) || device >= n || (r = d->cuDeviceGet(&d->dev, device))) {
        snprintf(err, errlen, "device %d of %d: %s (%d)", device, n, wg_err_name(d, r), (int)r);
        return WG_NO_DEVICE;
    }
    d->cuDeviceGetName(d->name, sizeof d->name, d->dev);
    if (d->cuDeviceGetUuid) d->cuDeviceGetUuid((CUuuid *)d->uuid, d->dev);
    if ((r = d->cuDevicePrimaryCtxRetain(&d->ctx, d->dev))) {
        snprintf(err, errlen, "cuDevicePrimaryCtxRetain: %s (%d)", wg_err_name(d, r), (int)r);
        return WG_CONTEXT;
    }
    d->hcuvid = dlopen(cuvid_path, RTLD_NOW | RTLD_LOCAL);
    if (!d->hcuvid) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "dlopen failed");
        return WG_NO_LIBNVCUVID;
    }
    return load_cuvid(d, err, errlen);
}

void wg_close(wg_driver *d)
{
    if (d->ctx) {
        if (d->mod && !wg_push(d)) {
            d->cuModuleUnload(d->mod);
            wg_pop(d);
        }
        d->cuDevicePrimaryCtxRelease(d->dev);
        d->ctx = NULL;
    }
    if (d->hcuvid) dlclose(d->hcuvid);
    if (d->hcuda) dlclose(d->hcuda);
    d->hcuvid = d->hcuda = NULL;
}

int wg_push(wg_driver *d) { return (int)d->cuCtxPushCurrent(d->ctx); }
int wg_pop(wg_driver *d) { return (int)d->cuCtxPopCurrent(NULL); }

CUresult wg_decoder_caps(wg_driver *d, int codec, int bit_depth_minus8, wg_caps *out)
{
    CUVIDDECODECAPS c;
    memset(&c, 0, sizeof c);
    c.eCodecType = (cudaVideoCodec)codec;
    c.eChromaFormat = cudaVideoChromaFormat_420;
    c.nBitDepthMinus8 = (unsigned)bit_depth_minus8;
    CUresult r = (CUresult)wg_push(d);
    if (r) return r;
    r = d->cuvidGetDecoderCaps(&c);
    wg_pop(d);
    memset(out, 0, sizeof *out);
    if (r) return r;
    out->supported = c.bIsSupported;
    out->nvdecs = c.nNumNVDECs;
    out->max_w = (int)c.nMaxWidth;
    out->max_h = (int)c.nMaxHeight;
    out->min_w = c.nMinWidth;
    out->min_h = c.nMinHeight;
    out->output_mask = c.nOutputFormatMask;
    return CUDA_SUCCESS;
}

CUresult wg_load_kernel(wg_driver *d, const char *ptx, const char *name, const char *vres, const char *hres)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return r;
    if (!d->mod) r = d->cuModuleLoadData(&d->mod, ptx);
    if (!r) r = d->cuModuleGetFunction(&d->k_rgb, d->mod, name);
    if (!r) r = d->cuModuleGetFunction(&d->k_vres, d->mod, vres);
    if (!r) r = d->cuModuleGetFunction(&d->k_hres, d->mod, hres);
    wg_pop(d);
    return r;
}

/* ------------------------------------------------------------------ sessions */

#define EXTRA_SURFACES 4
#define MAX_SURFACES 32

static int fail(wg_session *s, CUresult r, const char *what)
{
    if (!s->err) {
        s->err = r ? r : (CUresult)1;
        snprintf(s->errmsg, sizeof s->errmsg, "%s: %s (%d)", what, wg_err_name(s->d, r), (int)r);
    }
    return 0; /* stops the parser */
}

/* a failure of the stream itself (hostile or mislabelled input), not of the driver */
static int bad_stream(wg_session *s, const char *msg)
{
    if (!s->err) {
        s->err = (CUresult)1;
        s->bad_stream = 1;
        snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
    }
    return 0;
}

static int CUDAAPI on_sequence(void *user, CUVIDEOFORMAT *f)
{
    wg_session *s = user;
    wg_driver *d = s->d;
    int need = f->min_num_decode_surfaces + EXTRA_SURFACES;
    if (need > MAX_SURFACES) need = MAX_SURFACES;
    s->disp_left = f->display_area.left;
    s->disp_top = f->display_area.top;
    s->width = f->display_area.right - f->display_area.left;
    s->height = f->display_area.bottom - f->display_area.top;
    s->bit_depth = f->bit_depth_luma_minus8 + 8;
    s->color_primaries_matrix = f->video_signal_description.matrix_coefficients;
    s->full_range = f->video_signal_description.video_full_range_flag;
    /* the caller's buffers are sized by the configuration: a stream that says otherwise stops here */
    if (f->chroma_format != cudaVideoChromaFormat_420 || f->bit_depth_chroma_minus8 != f->bit_depth_luma_minus8) {
        char m[160];
        snprintf(m, sizeof m, "the stream is not 4:2:0 of one bit depth (chroma format %d, depths %d/%d)",
                 (int)f->chroma_format, f->bit_depth_luma_minus8 + 8, f->bit_depth_chroma_minus8 + 8);
        return bad_stream(s, m);
    }
    if (s->expect_w && (s->width != s->expect_w || s->height != s->expect_h || s->bit_depth != s->expect_bits ||
                        s->disp_left < 0 || s->disp_top < 0 || f->display_area.right > (int)f->coded_width ||
                        f->display_area.bottom > (int)f->coded_height)) {
        char m[200];
        snprintf(m, sizeof m, "the stream is %dx%d at %d bits (display area %d,%d..%d,%d of %ux%u), the configuration says %dx%d at %d",
                 s->width, s->height, s->bit_depth, f->display_area.left, f->display_area.top, f->display_area.right,
                 f->display_area.bottom, f->coded_width, f->coded_height, s->expect_w, s->expect_h, s->expect_bits);
        return bad_stream(s, m);
    }
    /* AV1: the sequence header's max_frame_width/height (frames may change size within it); the
     * parser hands a CUVIDEOFORMATEX when it has sequence header data (as NVIDIA's NvDecoder reads it) */
    unsigned long max_w = f->coded_width, max_h = f->coded_height;
    if (f->codec == cudaVideoCodec_AV1 && f->seqhdr_data_length > 0) {
        const CUVIDEOFORMATEX *ex = (const CUVIDEOFORMATEX *)f;
        if (ex->av1.max_width > max_w) max_w = ex->av1.max_width;
        if (ex->av1.max_height > max_h) max_h = ex->av1.max_height;
    }
    /* a pooled decoder of the same format serves the next segment unchanged */
    if (s->have_dec && s->ci.CodecType == f->codec && s->ci.ulWidth == f->coded_width &&
        s->ci.ulHeight == f->coded_height && s->ci.bitDepthMinus8 == f->bit_depth_luma_minus8 &&
        s->ci.ulMaxWidth >= max_w && s->ci.ulMaxHeight >= max_h && s->decode_surfaces >= need)
        return s->decode_surfaces;
    if (s->have_dec) {
        d->cuvidDestroyDecoder(s->dec);
        s->have_dec = 0;
    }
    CUVIDDECODECREATEINFO ci;
    memset(&ci, 0, sizeof ci);
    ci.CodecType = f->codec;
    ci.ulWidth = f->coded_width;
    ci.ulHeight = f->coded_height;
    ci.ulMaxWidth = max_w;
    ci.ulMaxHeight = max_h;
    ci.ulNumDecodeSurfaces = (unsigned long)need;
    ci.ChromaFormat = f->chroma_format;
    ci.bitDepthMinus8 = f->bit_depth_luma_minus8;
    ci.OutputFormat = f->bit_depth_luma_minus8 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
    ci.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;
    ci.ulTargetWidth = f->coded_width;
    ci.ulTargetHeight = f->coded_height;
    ci.ulNumOutputSurfaces = 2;
    ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    ci.vidLock = s->lock;
    CUresult r = d->cuvidCreateDecoder(&s->dec, &ci);
    if (r) return fail(s, r, "cuvidCreateDecoder");
    s->ci = ci;
    s->have_dec = 1;
    s->decode_surfaces = need;
    s->n_decoders_created++;
    return need;
}

static int CUDAAPI on_decode(void *user, CUVIDPICPARAMS *pp)
{
    wg_session *s = user;
    if (!s->have_dec) return fail(s, (CUresult)1, "decode before sequence");
    CUresult r = s->d->cuvidDecodePicture(s->dec, pp);
    if (r) return fail(s, r, "cuvidDecodePicture");
    s->n_decoded++;
    return 1;
}

static CUresult copy_nv12(wg_session *s, CUdeviceptr src, unsigned pitch, unsigned char *dst)
{
    wg_driver *d = s->d;
    int bps = s->bit_depth > 8 ? 2 : 1;
    size_t wb = (size_t)s->width * (size_t)bps, cwb = (size_t)((s->width + 1) / 2) * 2 * (size_t)bps;
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = src + (size_t)s->disp_top * pitch + (size_t)s->disp_left * (size_t)bps;
    m.srcPitch = pitch;
    m.dstMemoryType = CU_MEMORYTYPE_HOST;
    m.dstHost = dst;
    m.dstPitch = wb;
    m.WidthInBytes = wb;
    m.Height = (size_t)s->height;
    CUresult r = d->cuMemcpy2DAsync(&m, s->stream);
    if (r) return r;
    m.srcDevice = src + (size_t)pitch * s->ci.ulTargetHeight + (size_t)(s->disp_top / 2) * pitch +
                  (size_t)(s->disp_left & ~1) * (size_t)bps;
    m.dstHost = dst + wb * (size_t)s->height;
    m.dstPitch = cwb;
    m.WidthInBytes = cwb;
    m.Height = (size_t)(s->height + 1) / 2;
    r = d->cuMemcpy2DAsync(&m, s->stream);
    __atomic_add_fetch(&d->frame_copy_bytes, (long long)(wb * (size_t)s->height + cwb * m.Height), __ATOMIC_RELAXED);
    return r;
}

/* the resize: the conversion fused with the vertical pass into the session's scratch, then the
 * horizontal pass into dst (kernels/rgb.cu) */
/* out_size is the bytes of one output element of kind k (rgb.cu's out_kind). */
static unsigned out_size(unsigned k) { return k == 0 ? 1u : k == 1 ? 4u : 2u; }

static CUresult launch_resize(wg_session *s, CUdeviceptr luma, CUdeviceptr chroma, unsigned pitch, unsigned bps,
                              unsigned shift, CUdeviceptr dst)
{
    wg_driver *d = s->d;
    if (s->width != s->in_w || s->height != s->in_h)
        return (CUresult)1; /* CUDA_ERROR_INVALID_VALUE: the filters are for another size (Go says so) */
    size_t need = (size_t)s->out_h * (size_t)s->in_w * 3u * sizeof(float);
    CUresult r;
    if (s->scratch_bytes < need)
        return (CUresult)1; /* CUDA_ERROR_INVALID_VALUE: Go reserves it first (wg_session_reserve_scratch) */
    unsigned w = (unsigned)s->in_w, ow = (unsigned)s->out_w, oh = (unsigned)s->out_h, n = (unsigned)s->table_n;
    unsigned dpitch = ow * 3u * out_size(s->out_kind);
    void *va[] = {&luma, &chroma, &pitch, &bps, &shift, &s->tables, &n, &s->scratch, &w, &oh, &s->vfilter, &s->vtaps};
    r = d->cuLaunchKernel(d->k_vres, (w + 31) / 32, (oh + 7) / 8, 1, 32, 8, 1, 0, s->stream, va, NULL);
    if (r) return r;
    void *ha[] = {&s->scratch, &w,           &dst,         &dpitch,      &ow,          &oh,          &s->hfilter,
                  &s->htaps,   &s->out_kind, &s->norm[0], &s->norm[1], &s->norm[2], &s->norm[3], &s->norm[4],
                  &s->norm[5]};
    return d->cuLaunchKernel(d->k_hres, (ow + 31) / 32, (oh + 7) / 8, 1, 32, 8, 1, 0, s->stream, ha, NULL);
}

/* exported by Go (gpu/releasewait_cgo.go): waits until the release event ev completed; 0 when it did */
extern int wgAwaitRelease(unsigned long long h, unsigned long long ev);

static CUresult launch_rgb(wg_session *s, CUdeviceptr src, unsigned pitch, CUdeviceptr dst)
{
    wg_driver *d = s->d;
    if (s->wait_event) {
        /* the destinations' previous readers (a client's kernels on the slot's last use) first: the
         * client's release event must have completed before this call's first write. Go polls it
         * (cuEventQuery) on the host, so that the decode's ctx and Options.ReleaseWait bound the wait
         * (a stream wait, cuStreamWaitEvent, then cuStreamSynchronize would block this thread for as
         * long as the client's stream is stuck). NVDEC's decode of the pictures before this one did
         * not wait: it writes no destination. Once complete, nothing is put on the stream: the
         * client's later records of the event must not hold back this stream. */
        if (wgAwaitRelease(s->wait_handle, s->wait_event)) {
            s->wait_failed = 1;
            return (CUresult)1;
        }
        s->wait_event = 0;
        s->n_waits++;
    }
    unsigned bps = s->bit_depth > 8 ? 2u : 1u;
    CUdeviceptr luma = src + (size_t)s->disp_top * pitch + (size_t)s->disp_left * bps;
    CUdeviceptr chroma = src + (size_t)pitch * s->ci.ulTargetHeight + (size_t)(s->disp_top / 2) * pitch +
                         (size_t)(s->disp_left & ~1) * bps;
    unsigned shift = bps == 2 ? 16u - (unsigned)s->bit_depth : 0u;
    if (s->out_w > 0) return launch_resize(s, luma, chroma, pitch, bps, shift, dst);
    unsigned w = (unsigned)s->width, h = (unsigned)s->height, dpitch = w * 3u * out_size(s->out_kind),
             n = (unsigned)s->table_n;
    void *args[] = {&luma,       &chroma,      &pitch,       &bps,         &shift,      &dst,
                    &dpitch,     &w,           &h,           &s->tables,   &n,          &s->out_kind,
                    &s->norm[0], &s->norm[1], &s->norm[2], &s->norm[3], &s->norm[4], &s->norm[5]};
    return d->cuLaunchKernel(d->k_rgb, (w + 31) / 32, (h + 7) / 8, 1, 32, 8, 1, 0, s->stream, args, NULL);
}

static int CUDAAPI on_display(void *user, CUVIDPARSERDISPINFO *di)
{
    wg_session *s = user;
    wg_driver *d = s->d;
    if (!di) return 1;
    s->n_displayed++;
    int any = 0;
    for (int i = 0; i < s->nwant; i++)
        if (s->want[i] == di->timestamp && !s->kept[i]) any = 1;
    if (!any) return 1; /* keep only the frames asked for: the others are never mapped */
    CUVIDPROCPARAMS vpp;
    memset(&vpp, 0, sizeof vpp);
    vpp.progressive_frame = di->progressive_frame;
    vpp.second_field = di->repeat_first_field + 1;
    vpp.top_field_first = di->top_field_first;
    vpp.unpaired_field = di->repeat_first_field < 0;
    vpp.output_stream = s->stream;
    unsigned long long src = 0;
    unsigned pitch = 0;
    CUresult r = d->cuvidMapVideoFrame64(s->dec, di->picture_index, &src, &pitch, &vpp);
    if (r) return fail(s, r, "cuvidMapVideoFrame64");
    for (int i = 0; i < s->nwant && !r; i++) {
        if (s->want[i] != di->timestamp || s->kept[i]) continue;
        if (s->mode == WG_OUT_NV12_HOST)
            r = copy_nv12(s, (CUdeviceptr)src, pitch, s->host_out + (size_t)i * s->host_frame_bytes);
        else
            r = launch_rgb(s, (CUdeviceptr)src, pitch,
                           s->dev_outs ? (CUdeviceptr)s->dev_outs[i]
                                       : s->dev_out + (size_t)i * (size_t)s->width * (size_t)s->height * 3u *
                                                          out_size(s->out_kind));
        s->kept[i] = 1;
        s->n_kept++;
    }
    CUresult r2 = d->cuStreamSynchronize(s->stream);
    CUresult r3 = d->cuvidUnmapVideoFrame64(s->dec, src);
    if (r && s->wait_failed) return fail(s, r, "the release event");
    if (r) return fail(s, r, s->mode == WG_OUT_NV12_HOST ? "cuMemcpy2DAsync" : "cuLaunchKernel");
    if (r2) return fail(s, r2, "cuStreamSynchronize");
    if (r3) return fail(s, r3, "cuvidUnmapVideoFrame64");
    return 1;
}

int wg_session_init(wg_session *s, wg_driver *d, int codec)
{
    memset(s, 0, sizeof *s);
    s->d = d;
    s->codec = codec;
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuvidCtxLockCreate(&s->lock, d->ctx);
    if (!r) r = d->cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING);
    wg_pop(d);
    return (int)r;
}

int wg_session_reserve_scratch(wg_session *s, size_t need)
{
    wg_driver *d = s->d;
    if (s->scratch_bytes >= need) return 0;
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    if (s->scratch) d->cuMemFree(s->scratch); /* the stream is synchronized after every frame */
    s->scratch = 0;
    s->scratch_bytes = 0;
    r = d->cuMemAlloc(&s->scratch, need);
    if (!r) s->scratch_bytes = need;
    wg_pop(d);
    return (int)r;
}

void wg_session_free(wg_session *s)
{
    wg_driver *d = s->d;
    if (!d || wg_push(d)) return;
    if (s->have_dec) d->cuvidDestroyDecoder(s->dec);
    if (s->scratch) d->cuMemFree(s->scratch);
    if (s->stream) d->cuStreamDestroy(s->stream);
    if (s->lock) d->cuvidCtxLockDestroy(s->lock);
    wg_pop(d);
    s->have_dec = 0;
    s->scratch = 0;
    s->scratch_bytes = 0;
    s->stream = NULL;
    s->lock = NULL;
}

/* AV1 scalable streams: operating point 0 without all layers, what the parser picks by default and
 * what ffmpeg's libdav1d wrapper (the CPU path's decoder) outputs by default */
static int CUDAAPI on_operating_point(void *user, CUVIDOPERATINGPOINTINFO *op)
{
    (void)user;
    (void)op;
    return 0;
}

int wg_session_decode(wg_session *s, const unsigned char *seqhdr, size_t seqhdr_len, const unsigned char *data,
                      const size_t *off, const int64_t *ts, int n)
{
    wg_driver *d = s->d;
    s->err = 0;
    s->wait_failed = 0;
    s->bad_stream = 0;
    s->errmsg[0] = 0;
    /* the sequence header from the container, as ffmpeg's cuviddec gives it (pExtVideoInfo) */
    CUVIDEOFORMATEX ext;
    memset(&ext, 0, sizeof ext);
    if (seqhdr && seqhdr_len > 0 && seqhdr_len <= sizeof ext.raw_seqhdr_data) {
        ext.format.seqhdr_data_length = (unsigned)seqhdr_len;
        memcpy(ext.raw_seqhdr_data, seqhdr, seqhdr_len);
    }
    CUresult r = (CUresult)wg_push(d);
    if (r) {
        fail(s, r, "cuCtxPushCurrent");
        return (int)s->err;
    }
    CUVIDPARSERPARAMS pp;
    memset(&pp, 0, sizeof pp);
    pp.CodecType = (cudaVideoCodec)s->codec;
    pp.ulMaxNumDecodeSurfaces = s->decode_surfaces ? (unsigned)s->decode_surfaces : 1;
    pp.ulMaxDisplayDelay = 2;
    pp.ulClockRate = 0;
    pp.pUserData = s;
    pp.pfnSequenceCallback = on_sequence;
    pp.pfnDecodePicture = on_decode;
    pp.pfnDisplayPicture = on_display;
    if (pp.CodecType == cudaVideoCodec_AV1) pp.pfnGetOperatingPoint = on_operating_point;
    if (ext.format.seqhdr_data_length) pp.pExtVideoInfo = &ext;
    r = d->cuvidCreateVideoParser(&s->parser, &pp);
    if (r) {
        fail(s, r, "cuvidCreateVideoParser");
        wg_pop(d);
        return (int)s->err;
    }
    s->n_parsers++;
    if (seqhdr && seqhdr_len > 0) {
        CUVIDSOURCEDATAPACKET pkt;
        memset(&pkt, 0, sizeof pkt);
        pkt.payload = seqhdr;
        pkt.payload_size = (unsigned long)seqhdr_len;
        r = d->cuvidParseVideoData(s->parser, &pkt);
        if (r) fail(s, r, "cuvidParseVideoData(sequence header)");
    }
    for (int i = 0; i < n && !s->err; i++) {
        CUVIDSOURCEDATAPACKET pkt;
        memset(&pkt, 0, sizeof pkt);
        pkt.payload = data + off[i];
        pkt.payload_size = (unsigned long)(off[i + 1] - off[i]);
        pkt.flags = CUVID_PKT_TIMESTAMP;
        pkt.timestamp = ts[i];
        r = d->cuvidParseVideoData(s->parser, &pkt);
        if (r) fail(s, r, "cuvidParseVideoData");
    }
    if (!s->err) {
        CUVIDSOURCEDATAPACKET pkt;
        memset(&pkt, 0, sizeof pkt);
        pkt.flags = CUVID_PKT_ENDOFSTREAM;
        r = d->cuvidParseVideoData(s->parser, &pkt);
        if (r) fail(s, r, "cuvidParseVideoData(end of stream)");
    }
    d->cuvidDestroyVideoParser(s->parser);
    s->parser = NULL;
    wg_pop(d);
    return (int)s->err;
}

/* ------------------------------------------------------------------ memory */

int wg_alloc(wg_driver *d, size_t n, unsigned long long *out)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    CUdeviceptr p = 0;
    r = d->cuMemAlloc(&p, n);
    wg_pop(d);
    *out = (unsigned long long)p;
    return (int)r;
}

int wg_free(wg_driver *d, unsigned long long p)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuMemFree((CUdeviceptr)p);
    wg_pop(d);
    return (int)r;
}

int wg_htod(wg_driver *d, unsigned long long dst, const void *src, size_t n)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuMemcpyHtoD((CUdeviceptr)dst, src, n);
    wg_pop(d);
    return (int)r;
}

/* the tests' read-back of frames: counted as frame bytes copied */
int wg_dtoh(wg_driver *d, void *dst, unsigned long long src, size_t n)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuMemcpyDtoH(dst, (CUdeviceptr)src, n);
    wg_pop(d);
    __atomic_add_fetch(&d->frame_copy_bytes, (long long)n, __ATOMIC_RELAXED);
    return (int)r;
}

int wg_mem_info(wg_driver *d, size_t *free_b, size_t *total_b)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuMemGetInfo(free_b, total_b);
    wg_pop(d);
    return (int)r;
}

long long wg_frame_copy_bytes(wg_driver *d) { return __atomic_load_n(&d->frame_copy_bytes, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------ IPC */

int wg_event_create(wg_driver *d, unsigned long long *ev, void *handle64)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    CUevent e = NULL;
    /* CU_EVENT_INTERPROCESS (4) needs CU_EVENT_DISABLE_TIMING (2) */
    r = d->cuEventCreate(&e, 4 | 2);
    if (!r) {
        if (!d->cuIpcGetEventHandle) r = (CUresult)500;
        else r = d->cuIpcGetEventHandle((wg_ipc_event_handle *)handle64, e);
    }
    wg_pop(d);
    *ev = (unsigned long long)(uintptr_t)e;
    return (int)r;
}

int wg_event_record(wg_driver *d, unsigned long long ev)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuEventRecord((CUevent)(uintptr_t)ev, NULL);
    wg_pop(d);
    return (int)r;
}

int wg_event_destroy(wg_driver *d, unsigned long long ev)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuEventDestroy((CUevent)(uintptr_t)ev);
    wg_pop(d);
    return (int)r;
}

int wg_event_query(wg_driver *d, unsigned long long ev)
{
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuEventQuery((CUevent)(uintptr_t)ev);
    wg_pop(d);
    return (int)r;
}

int wg_ipc_open_event(wg_driver *d, const void *handle64, unsigned long long *ev)
{
    if (!d->cuIpcOpenEventHandle) return 500; /* CUDA_ERROR_NOT_FOUND: the driver lacks it */
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    wg_ipc_event_handle h;
    memcpy(&h, handle64, sizeof h);
    CUevent e = NULL;
    r = d->cuIpcOpenEventHandle(&e, h);
    wg_pop(d);
    *ev = (unsigned long long)(uintptr_t)e;
    return (int)r;
}

int wg_ipc_mem(wg_driver *d, unsigned long long p, void *handle64)
{
    if (!d->cuIpcGetMemHandle) return 500;
    CUresult r = (CUresult)wg_push(d);
    if (r) return (int)r;
    r = d->cuIpcGetMemHandle((wg_ipc_mem_handle *)handle64, (CUdeviceptr)p);
    wg_pop(d);
    return (int)r;
}
