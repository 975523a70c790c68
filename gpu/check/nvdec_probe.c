/*
 * nvdec_probe.c - one-shot NVDEC probe: capabilities, bit-exactness, throughput.
 *
 * A copy of ../shared/tools/gpu-probe/nvdec_probe.c (unchanged below this note) kept
 * here so that `make gpu-check` measures the raw NVDEC rate of its own bench clip with
 * no Weft code in between (`bench` mode): `make gpu-check-prep` builds it into
 * gpu/check/data/bin with the ffnvcodec headers of gpu/include.
 *
 * Build:  gcc -O2 -Wall -o nvdec_probe nvdec_probe.c -Idata/include -ldl -lpthread
 *
 * Uses the MIT-licensed nv-codec-headers (ffnvcodec/dynlink_loader.h), which
 * dlopen() libcuda.so.1 and libnvcuvid.so.1 at run time: nothing links against
 * CUDA at build time, and `rawhash` runs on machines without any GPU.
 *
 * Modes:
 *   caps                                     driver/device info + cuvidGetDecoderCaps
 *   hash FILE h264|hevc [OUT|-] [hwcrop]     decode Annex-B file, one hash line per frame
 *   rawhash W H [BYTES_PER_SAMPLE]           hash raw NV12 (1) / P010 (2) frames from stdin
 *   bench FILE h264|hevc SESSIONS SECONDS    SESSIONS decoding threads sharing one context
 *
 * Hash line: "<display_index> <fnv1a64 over Y rows then interleaved UV rows>" of the
 * display (cropped) area, rows packed without pitch padding - i.e. exactly the bytes of
 * `ffmpeg -f rawvideo -pix_fmt nv12` (or p010le for 10-bit).
 *
 * Env: NVDEC_PROBE_DELAY  parser ulMaxDisplayDelay (default 2)
 *      NVDEC_PROBE_CHUNK  bytes per cuvidParseVideoData call (default 65536)
 *
 * Exit codes: 0 ok, 1 CUDA/CUVID call failed, 2 libcuda missing, 3 libnvcuvid missing,
 *             4 usage / file / format problem.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- ffnvcodec loader glue: keep the dlerror() text and the loader's messages; a symbol
 * the library lacks is recorded and replaced by a stub returning CUDA_ERROR_NOT_FOUND, so one
 * missing entry point we never call cannot stop the whole probe ---- */
static char g_dlerr[1024], g_loadmsg[512], g_missing[1024];
static void *probe_dlopen(const char *name)
{
    void *h = dlopen(name, RTLD_LAZY);
    if (!h) {
        const char *e = dlerror();
        snprintf(g_dlerr, sizeof g_dlerr, "%s", e ? e : "dlopen failed");
    }
    return h;
}
static void probe_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_loadmsg, sizeof g_loadmsg, fmt, ap);
    va_end(ap);
    g_loadmsg[strcspn(g_loadmsg, "\n")] = 0;
    fprintf(stderr, "ffnvcodec: %s\n", g_loadmsg);
}
typedef int CUresult_int;
static CUresult_int missing_symbol_stub(void)
{
    return 500; /* CUDA_ERROR_NOT_FOUND */
}
static void *probe_dlsym(void *lib, const char *sym)
{
    void *p = dlsym(lib, sym);
    if (!p) {
        size_t n = strlen(g_missing);
        snprintf(g_missing + n, sizeof g_missing - n, "%s%s", n ? "," : "", sym);
        p = (void *)missing_symbol_stub;
    }
    return p;
}
#define FFNV_LOAD_FUNC(path) probe_dlopen(path)
#define FFNV_SYM_FUNC(lib, sym) probe_dlsym((lib), (sym))
#define FFNV_FREE_FUNC(lib) dlclose(lib)
#define FFNV_LOG_FUNC(logctx, msg, ...) ((void)(logctx), probe_log((msg), __VA_ARGS__))
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...) ((void)(logctx))
#include <ffnvcodec/dynlink_loader.h>

/* two driver entry points that CudaFunctions does not carry */
typedef CUresult CUDAAPI tcuDriverGetVersion(int *version);
typedef CUresult CUDAAPI tcuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes);

static CudaFunctions *cu;
static CuvidFunctions *cv;
static tcuDriverGetVersion *p_cuDriverGetVersion;
static tcuMemGetInfo_v2 *p_cuMemGetInfo;
static CUcontext g_ctx;
static CUdevice g_dev;
static FILE *g_diag;          /* INFO / RESULT lines (stderr when hashes go to stdout) */
static const char *g_mode = "?";

#define EXTRA_SURFACES 4      /* on top of CUVIDEOFORMAT.min_num_decode_surfaces */
#define MAX_SURFACES 32

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *cu_err_name(CUresult r)
{
    const char *s = NULL;
    if (cu && cu->cuGetErrorName && cu->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
        return s;
    return "CUDA_ERROR_UNKNOWN_CODE";
}

/* Report a failed call (function name taken from the expression text) and exit. */
static void die_cu(const char *expr, CUresult r, int line)
{
    const char *p = strstr(expr, "->");
    p = p ? p + 2 : expr;
    int n = (int)strcspn(p, "(");
    fprintf(stderr, "ERROR nvdec_probe.c:%d: %.*s failed: %s (%d)\n", line, n, p, cu_err_name(r), (int)r);
    fprintf(g_diag, "RESULT error_%s=%.*s:%s(%d)\n", g_mode, n, p, cu_err_name(r), (int)r);
    fflush(NULL);
    _exit(1);
}
#define CK(expr) do { CUresult ck_r_ = (expr); if (ck_r_ != CUDA_SUCCESS) die_cu(#expr, ck_r_, __LINE__); } while (0)

static void die_msg(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "ERROR ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(NULL);
    _exit(code);
}

static const char *lib_path(void *handle)
{
    struct link_map *lm = NULL;
    if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
        return lm->l_name;
    return "?";
}

static void load_cuda(void)
{
    g_dlerr[0] = g_loadmsg[0] = g_missing[0] = 0;
    if (cuda_load_functions(&cu, NULL) != 0) {
        if (g_dlerr[0])
            fprintf(g_diag, "RESULT cuda=missing %s\n", g_dlerr);
        else
            fprintf(g_diag, "RESULT cuda=symbol_missing %s\n", g_loadmsg);
        fflush(NULL);
        _exit(2);
    }
    p_cuDriverGetVersion = (tcuDriverGetVersion *)probe_dlsym(cu->lib, "cuDriverGetVersion");
    p_cuMemGetInfo = (tcuMemGetInfo_v2 *)probe_dlsym(cu->lib, "cuMemGetInfo_v2");
    fprintf(stderr, "INFO libcuda loaded from %s; symbols missing: %s\n", lib_path(cu->lib),
            g_missing[0] ? g_missing : "none");
}

static void load_cuvid(void)
{
    g_dlerr[0] = g_loadmsg[0] = g_missing[0] = 0;
    if (cuvid_load_functions(&cv, NULL) != 0) {
        if (g_dlerr[0])
            fprintf(g_diag, "RESULT nvcuvid=missing %s\n", g_dlerr);
        else
            fprintf(g_diag, "RESULT nvcuvid=symbol_missing %s\n", g_loadmsg);
        fflush(NULL);
        _exit(3);
    }
    fprintf(stderr, "INFO libnvcuvid loaded from %s; symbols missing: %s\n", lib_path(cv->lib),
            g_missing[0] ? g_missing : "none");
}

/* cuInit + primary context of device 0, left current on the calling thread */
static void init_context(void)
{
    CK(cu->cuInit(0));
    CK(cu->cuDeviceGet(&g_dev, 0));
    /* blocking sync: threads waiting in cuStreamSynchronize sleep instead of spinning, leaving
     * the CPU to the (CPU-side) parsers of the other sessions; only a hint, so not fatal */
    CUresult r = cu->cuDevicePrimaryCtxSetFlags(g_dev, CU_CTX_SCHED_BLOCKING_SYNC);
    if (r != CUDA_SUCCESS)
        fprintf(stderr, "WARN cuDevicePrimaryCtxSetFlags(BLOCKING_SYNC) failed: %s (%d), continuing\n",
                cu_err_name(r), (int)r);
    CK(cu->cuDevicePrimaryCtxRetain(&g_ctx, g_dev));
    CK(cu->cuCtxPushCurrent(g_ctx));
}

static void release_context(void)
{
    CK(cu->cuCtxPopCurrent(NULL));
    CK(cu->cuDevicePrimaryCtxRelease(g_dev));
}

/* ---------------------------------------------------------------- hashing */
static uint64_t fnv1a64(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
#define FNV_OFFSET 0xcbf29ce484222325ULL

/* bytes of one packed semi-planar 4:2:0 frame (NV12 / P010 / P016) */
static size_t frame_bytes(size_t w, size_t h, size_t bps)
{
    return w * h * bps + ((w + 1) & ~(size_t)1) * ((h + 1) / 2) * bps;
}

/* ---------------------------------------------------------------- decode session */
enum { MODE_HASH, MODE_BENCH };

typedef struct Session {
    int id, mode, hwcrop;
    cudaVideoCodec codec;
    const unsigned char *data;
    size_t size;
    CUstream stream;
    CUvideoctxlock lock;
    CUvideoparser parser;
    CUvideodecoder dec;
    CUVIDEOFORMAT fmt;             /* format the decoder was created for */
    int nsurf, bps;
    int out_w, out_h;              /* display size = what we copy out */
    int src_x, src_y;              /* top-left of the display area in the mapped surface */
    int surf_h;                    /* rows of the luma plane in the mapped surface */
    size_t fbytes;
    unsigned char *hostbuf;        /* hash mode: packed frame on the host */
    CUdeviceptr devbuf;            /* bench mode: packed frame on the device */
    FILE *out;
    long long frames;
    int st_ok, st_err, st_unavail; /* cuvidGetDecodeStatus results (hash mode) */
    double t_end;
    char errmsg[256];
    int failed;
} Session;

static int same_format(const CUVIDEOFORMAT *a, const CUVIDEOFORMAT *b)
{
    return a->codec == b->codec && a->coded_width == b->coded_width &&
           a->coded_height == b->coded_height && a->chroma_format == b->chroma_format &&
           a->bit_depth_luma_minus8 == b->bit_depth_luma_minus8 &&
           a->display_area.left == b->display_area.left && a->display_area.top == b->display_area.top &&
           a->display_area.right == b->display_area.right && a->display_area.bottom == b->display_area.bottom;
}

static int fail_cb(Session *s, const char *msg)
{
    snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
    s->failed = 1;
    return 0;
}

/* pfnSequenceCallback: create the decoder; return the number of decode surfaces (>1),
 * which also sets the parser's DPB size (CUVIDPARSERPARAMS.ulMaxNumDecodeSurfaces). */
static int CUDAAPI on_sequence(void *ud, CUVIDEOFORMAT *f)
{
    Session *s = ud;
    if (s->dec) {
        if (same_format(&s->fmt, f))
            return 1;                      /* repeated identical sequence header */
        return fail_cb(s, "stream changes format mid-stream (not supported by this probe)");
    }
    if (f->chroma_format != cudaVideoChromaFormat_420)
        return fail_cb(s, "only 4:2:0 streams are handled");

    CUVIDDECODECAPS caps;
    memset(&caps, 0, sizeof caps);
    caps.eCodecType = f->codec;
    caps.eChromaFormat = f->chroma_format;
    caps.nBitDepthMinus8 = f->bit_depth_luma_minus8;
    CK(cv->cuvidGetDecoderCaps(&caps));
    if (!caps.bIsSupported)
        return fail_cb(s, "cuvidGetDecoderCaps: codec/bit depth not supported");
    if (f->coded_width > caps.nMaxWidth || f->coded_height > caps.nMaxHeight ||
        (f->coded_width >> 4) * (f->coded_height >> 4) > caps.nMaxMBCount)
        return fail_cb(s, "cuvidGetDecoderCaps: resolution above nMaxWidth/nMaxHeight/nMaxMBCount");
    cudaVideoSurfaceFormat ofmt = f->bit_depth_luma_minus8 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
    if (!(caps.nOutputFormatMask & (1u << ofmt)))
        return fail_cb(s, "cuvidGetDecoderCaps: NV12/P016 output not in nOutputFormatMask");

    int nsurf = (f->min_num_decode_surfaces ? f->min_num_decode_surfaces : 16) + EXTRA_SURFACES;
    if (nsurf > MAX_SURFACES)
        nsurf = MAX_SURFACES;
    int disp_w = f->display_area.right - f->display_area.left;
    int disp_h = f->display_area.bottom - f->display_area.top;

    CUVIDDECODECREATEINFO ci;
    memset(&ci, 0, sizeof ci);
    ci.ulWidth = f->coded_width;
    ci.ulHeight = f->coded_height;
    ci.ulNumDecodeSurfaces = nsurf;
    ci.CodecType = f->codec;
    ci.ChromaFormat = f->chroma_format;
    ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    ci.bitDepthMinus8 = f->bit_depth_luma_minus8;
    ci.ulIntraDecodeOnly = 0;
    ci.ulMaxWidth = f->coded_width;
    ci.ulMaxHeight = f->coded_height;
    ci.OutputFormat = ofmt;
    ci.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;  /* frames as coded, like ffmpeg sw decode */
    ci.ulNumOutputSurfaces = 2;
    ci.vidLock = s->lock;
    if (s->hwcrop) {
        /* ffmpeg h264_cuvid style: NVDEC crops to display_area, output surface = display size */
        ci.display_area.left = (short)f->display_area.left;
        ci.display_area.top = (short)f->display_area.top;
        ci.display_area.right = (short)f->display_area.right;
        ci.display_area.bottom = (short)f->display_area.bottom;
        ci.ulTargetWidth = (disp_w + 1) & ~1;
        ci.ulTargetHeight = (disp_h + 1) & ~1;
        ci.target_rect.right = (short)ci.ulTargetWidth;
        ci.target_rect.bottom = (short)ci.ulTargetHeight;
        s->src_x = 0;
        s->src_y = 0;
    } else {
        /* SDK NvDecoder / ffmpeg nvdec style: full coded surface, we crop while copying */
        ci.ulTargetWidth = f->coded_width;
        ci.ulTargetHeight = f->coded_height;
        s->src_x = f->display_area.left;
        s->src_y = f->display_area.top;
    }
    CK(cv->cuvidCreateDecoder(&s->dec, &ci));

    s->fmt = *f;
    s->nsurf = nsurf;
    s->bps = f->bit_depth_luma_minus8 ? 2 : 1;
    s->out_w = disp_w;
    s->out_h = disp_h;
    s->surf_h = (int)((ci.ulTargetHeight + 1) & ~1UL);
    s->fbytes = frame_bytes(disp_w, disp_h, s->bps);
    if (s->mode == MODE_HASH) {
        s->hostbuf = malloc(s->fbytes);
        if (!s->hostbuf)
            return fail_cb(s, "out of host memory");
    } else {
        CK(cu->cuMemAlloc(&s->devbuf, s->fbytes));
    }
    if (s->id == 0)
        fprintf(stderr, "INFO sequence: codec=%d coded=%ux%u display=(%d,%d)-(%d,%d) bitdepth=%d "
                "min_surfaces=%u -> ulNumDecodeSurfaces=%d progressive=%d crop=%s\n",
                (int)f->codec, f->coded_width, f->coded_height, f->display_area.left, f->display_area.top,
                f->display_area.right, f->display_area.bottom, 8 + f->bit_depth_luma_minus8,
                (unsigned)f->min_num_decode_surfaces, nsurf, f->progressive_sequence,
                s->hwcrop ? "hw" : "sw");
    return nsurf;
}

static int CUDAAPI on_decode(void *ud, CUVIDPICPARAMS *pp)
{
    Session *s = ud;
    if (!s->dec)
        return fail_cb(s, "decode callback before sequence callback");
    CK(cv->cuvidDecodePicture(s->dec, pp));
    return 1;
}

static int CUDAAPI on_display(void *ud, CUVIDPARSERDISPINFO *di)
{
    Session *s = ud;
    if (!di)
        return 1;    /* only sent with CUVID_PKT_NOTIFY_EOS, which we do not use */

    CUVIDPROCPARAMS vpp;
    memset(&vpp, 0, sizeof vpp);
    vpp.progressive_frame = di->progressive_frame;
    vpp.top_field_first = di->top_field_first;
    vpp.second_field = 0;
    vpp.unpaired_field = di->repeat_first_field < 0;
    vpp.output_stream = s->stream;

    unsigned long long dptr = 0;
    unsigned int pitch = 0;
    CK(cv->cuvidMapVideoFrame(s->dec, di->picture_index, &dptr, &pitch, &vpp));

    if (s->mode == MODE_HASH) {
        CUVIDGETDECODESTATUS st;
        memset(&st, 0, sizeof st);
        CUresult r = cv->cuvidGetDecodeStatus(s->dec, di->picture_index, &st);
        if (r != CUDA_SUCCESS)
            s->st_unavail++;
        else if (st.decodeStatus == cuvidDecodeStatus_Error ||
                 st.decodeStatus == cuvidDecodeStatus_Error_Concealed)
            s->st_err++;
        else
            s->st_ok++;
    }

    size_t luma_row = (size_t)s->out_w * s->bps;
    size_t chroma_row = (size_t)((s->out_w + 1) & ~1) * s->bps;
    CUDA_MEMCPY2D m;
    memset(&m, 0, sizeof m);
    m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    m.srcDevice = (CUdeviceptr)dptr;
    m.srcPitch = pitch;
    m.srcXInBytes = (size_t)s->src_x * s->bps;
    m.srcY = (size_t)s->src_y;
    if (s->mode == MODE_HASH) {
        m.dstMemoryType = CU_MEMORYTYPE_HOST;
        m.dstHost = s->hostbuf;
    } else {
        m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        m.dstDevice = s->devbuf;
    }
    m.dstPitch = luma_row;
    m.WidthInBytes = luma_row;
    m.Height = (size_t)s->out_h;
    CK(cu->cuMemcpy2DAsync(&m, s->stream));

    /* interleaved UV plane starts after surf_h luma rows of the mapped surface */
    m.srcXInBytes = (size_t)(s->src_x & ~1) * s->bps;
    m.srcY = (size_t)s->surf_h + (size_t)s->src_y / 2;
    if (s->mode == MODE_HASH)
        m.dstHost = s->hostbuf + luma_row * s->out_h;
    else
        m.dstDevice = s->devbuf + luma_row * s->out_h;
    m.dstPitch = chroma_row;
    m.WidthInBytes = chroma_row;
    m.Height = (size_t)(s->out_h + 1) / 2;
    CK(cu->cuMemcpy2DAsync(&m, s->stream));
    CK(cu->cuStreamSynchronize(s->stream));
    CK(cv->cuvidUnmapVideoFrame(s->dec, dptr));

    if (s->mode == MODE_HASH)
        fprintf(s->out, "%lld %016" PRIx64 "\n", s->frames, fnv1a64(FNV_OFFSET, s->hostbuf, s->fbytes));
    s->frames++;
    return 1;
}

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return (v && *v) ? atoi(v) : def;
}

static void session_begin(Session *s)
{
    CK(cu->cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING));
    CK(cv->cuvidCtxLockCreate(&s->lock, g_ctx));
    CUVIDPARSERPARAMS pp;
    memset(&pp, 0, sizeof pp);
    pp.CodecType = s->codec;
    pp.ulMaxNumDecodeSurfaces = 1;     /* raised by the sequence callback's return value */
    pp.ulClockRate = 0;
    pp.ulErrorThreshold = 0;
    pp.ulMaxDisplayDelay = (unsigned)env_int("NVDEC_PROBE_DELAY", 2);
    pp.pUserData = s;
    pp.pfnSequenceCallback = on_sequence;
    pp.pfnDecodePicture = on_decode;
    pp.pfnDisplayPicture = on_display;
    CK(cv->cuvidCreateVideoParser(&s->parser, &pp));
}

static void session_end(Session *s)
{
    if (s->parser)
        CK(cv->cuvidDestroyVideoParser(s->parser));
    if (s->dec)
        CK(cv->cuvidDestroyDecoder(s->dec));
    if (s->lock)
        CK(cv->cuvidCtxLockDestroy(s->lock));
    if (s->devbuf)
        CK(cu->cuMemFree(s->devbuf));
    if (s->stream)
        CK(cu->cuStreamDestroy(s->stream));
    free(s->hostbuf);
    s->parser = NULL;
    s->dec = NULL;
    s->lock = NULL;
    s->devbuf = 0;
    s->stream = NULL;
    s->hostbuf = NULL;
}

static void feed(Session *s, const unsigned char *p, size_t n, int eos)
{
    CUVIDSOURCEDATAPACKET pkt;
    memset(&pkt, 0, sizeof pkt);
    pkt.payload = p;
    pkt.payload_size = n;
    pkt.flags = eos ? CUVID_PKT_ENDOFSTREAM : 0;
    CK(cv->cuvidParseVideoData(s->parser, &pkt));
    if (s->failed)
        die_msg(1, "session %d: %s", s->id, s->errmsg);
}

static size_t chunk_size(void)
{
    int c = env_int("NVDEC_PROBE_CHUNK", 65536);
    return c > 0 ? (size_t)c : 65536;
}

/* ---------------------------------------------------------------- helpers for modes */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die_msg(4, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n <= 0)
        die_msg(4, "%s is empty", path);
    unsigned char *buf = malloc((size_t)n);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        die_msg(4, "cannot read %s", path);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static cudaVideoCodec parse_codec(const char *name)
{
    if (!strcmp(name, "h264"))
        return cudaVideoCodec_H264;
    if (!strcmp(name, "hevc") || !strcmp(name, "h265"))
        return cudaVideoCodec_HEVC;
    die_msg(4, "codec must be h264 or hevc, not '%s'", name);
    return cudaVideoCodec_NumCodecs;
}

/* ---------------------------------------------------------------- caps */
static int mode_caps(void)
{
    static const struct { const char *key; cudaVideoCodec codec; unsigned bd_minus8; } tab[] = {
        { "h264", cudaVideoCodec_H264, 0 }, { "hevc", cudaVideoCodec_HEVC, 0 },
        { "hevc10", cudaVideoCodec_HEVC, 2 }, { "av1", cudaVideoCodec_AV1, 0 },
        { "vp9", cudaVideoCodec_VP9, 0 },
    };
    load_cuda();
    fprintf(g_diag, "RESULT cuda=loaded %s symbols_missing=%s\n", lib_path(cu->lib), g_missing[0] ? g_missing : "none");
    double t0 = now_s();
    CK(cu->cuInit(0));
    double t_init = now_s() - t0;
    int ver = 0, ndev = 0;
    CK(p_cuDriverGetVersion(&ver));
    CK(cu->cuDeviceGetCount(&ndev));
    fprintf(g_diag, "RESULT cuda_driver_version=%d\nRESULT cuda_device_count=%d\n", ver, ndev);
    if (ndev < 1)
        die_msg(1, "no CUDA device");
    t0 = now_s();
    init_context();
    fprintf(g_diag, "RESULT cuda_init_ms=cuInit:%.0f primary_ctx:%.0f\n", t_init * 1e3, (now_s() - t0) * 1e3);
    char name[256] = { 0 };
    int ccmaj = 0, ccmin = 0;
    CK(cu->cuDeviceGetName(name, (int)sizeof name - 1, g_dev));
    CK(cu->cuDeviceGetAttribute(&ccmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev));
    CK(cu->cuDeviceGetAttribute(&ccmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev));
    size_t fr = 0, tot = 0;
    CK(p_cuMemGetInfo(&fr, &tot));
    fprintf(g_diag, "RESULT gpu_name=%s\nRESULT gpu_cc=%d.%d\nRESULT gpu_mem_total_mib=%zu\n",
            name, ccmaj, ccmin, tot >> 20);

    load_cuvid();
    fprintf(g_diag, "RESULT nvcuvid=loaded %s symbols_missing=%s\n", lib_path(cv->lib), g_missing[0] ? g_missing : "none");
    int errors = 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        CUVIDDECODECAPS c;
        memset(&c, 0, sizeof c);
        c.eCodecType = tab[i].codec;
        c.eChromaFormat = cudaVideoChromaFormat_420;
        c.nBitDepthMinus8 = tab[i].bd_minus8;
        CUresult r = cv->cuvidGetDecoderCaps(&c);
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "ERROR cuvidGetDecoderCaps(%s) failed: %s (%d)\n", tab[i].key, cu_err_name(r), (int)r);
            fprintf(g_diag, "RESULT caps_%s=error:cuvidGetDecoderCaps:%s(%d)\n", tab[i].key, cu_err_name(r), (int)r);
            errors++;
            continue;
        }
        fprintf(g_diag, "RESULT caps_%s=supported:%d nvdecs:%d max:%ux%u\n", tab[i].key,
                c.bIsSupported, c.nNumNVDECs, c.nMaxWidth, c.nMaxHeight);
        fprintf(stderr, "INFO caps_%s outfmt_mask=0x%x max_mb=%u min=%ux%u\n", tab[i].key,
                c.nOutputFormatMask, c.nMaxMBCount, c.nMinWidth, c.nMinHeight);
    }
    release_context();
    return errors ? 1 : 0;
}

/* ---------------------------------------------------------------- hash */
static int mode_hash(int argc, char **argv)
{
    if (argc < 4)
        die_msg(4, "usage: hash FILE h264|hevc [OUT|-] [hwcrop]");
    const char *outpath = argc > 4 ? argv[4] : "-";
    int hwcrop = argc > 5 && !strcmp(argv[5], "hwcrop");
    Session s;
    memset(&s, 0, sizeof s);
    s.mode = MODE_HASH;
    s.hwcrop = hwcrop;
    s.codec = parse_codec(argv[3]);
    s.data = read_file(argv[2], &s.size);
    if (!strcmp(outpath, "-")) {
        s.out = stdout;
        g_diag = stderr;            /* keep stdout pure hash lines */
    } else if (!(s.out = fopen(outpath, "w"))) {
        die_msg(4, "cannot write %s", outpath);
    }
    load_cuda();
    load_cuvid();
    init_context();
    session_begin(&s);
    double t0 = now_s();
    size_t chunk = chunk_size();
    for (size_t off = 0; off < s.size; off += chunk)
        feed(&s, s.data + off, s.size - off < chunk ? s.size - off : chunk, 0);
    feed(&s, NULL, 0, 1);
    double t = now_s() - t0;
    if (s.out != stdout)
        fclose(s.out);
    const char *base = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2];
    int blen = (int)strcspn(base, ".");
    fprintf(g_diag, "RESULT hash_%.*s%s frames=%lld secs=%.3f fps=%.1f surfaces=%d decode_status=ok:%d,error:%d,unavailable:%d\n",
            blen, base, hwcrop ? "_hwcrop" : "", s.frames, t, t > 0 ? s.frames / t : 0.0, s.nsurf,
            s.st_ok, s.st_err, s.st_unavail);
    session_end(&s);
    release_context();
    return s.frames > 0 ? 0 : 1;
}

/* ---------------------------------------------------------------- rawhash */
static int mode_rawhash(int argc, char **argv)
{
    if (argc < 4)
        die_msg(4, "usage: rawhash W H [BYTES_PER_SAMPLE]   (NV12 = 1, P010/P016 = 2)");
    long w = atol(argv[2]), h = atol(argv[3]), bps = argc > 4 ? atol(argv[4]) : 1;
    if (w <= 0 || h <= 0 || (bps != 1 && bps != 2))
        die_msg(4, "bad rawhash arguments");
    size_t n = frame_bytes((size_t)w, (size_t)h, (size_t)bps);
    unsigned char *buf = malloc(n);
    if (!buf)
        die_msg(4, "out of memory");
    long long idx = 0;
    for (;;) {
        size_t got = 0;
        while (got < n) {
            size_t r = fread(buf + got, 1, n - got, stdin);
            if (r == 0)
                break;
            got += r;
        }
        if (got == 0)
            break;
        if (got < n)
            die_msg(4, "partial frame at the end of input (%zu of %zu bytes)", got, n);
        printf("%lld %016" PRIx64 "\n", idx++, fnv1a64(FNV_OFFSET, buf, n));
    }
    fprintf(stderr, "INFO rawhash frames=%lld\n", idx);
    free(buf);
    return idx > 0 ? 0 : 4;
}

/* ---------------------------------------------------------------- bench */
static pthread_barrier_t g_bar;
static double g_t0, g_secs;

static void *bench_thread(void *arg)
{
    Session *s = arg;
    size_t chunk = chunk_size(), off = 0;
    CK(cu->cuCtxPushCurrent(g_ctx));
    session_begin(s);
    while (!s->dec && off < s->size) {         /* warm-up: until the decoder exists */
        size_t n = s->size - off < chunk ? s->size - off : chunk;
        feed(s, s->data + off, n, 0);
        off += n;
    }
    if (!s->dec)
        die_msg(4, "session %d: no sequence header in the stream", s->id);
    pthread_barrier_wait(&g_bar);             /* 1: all decoders created, main reads memory */
    pthread_barrier_wait(&g_bar);             /* 2: go */
    s->frames = 0;
    double deadline = g_t0 + g_secs;
    for (int done = 0; !done;) {
        if (off >= s->size)
            off = 0;                          /* loop: the clip starts with SPS/PPS + IDR */
        size_t n = s->size - off < chunk ? s->size - off : chunk;
        feed(s, s->data + off, n, 0);
        off += n;
        done = now_s() >= deadline;
    }
    feed(s, NULL, 0, 1);                      /* flush: those frames are counted too */
    s->t_end = now_s();
    session_end(s);
    CK(cu->cuCtxPopCurrent(NULL));
    return NULL;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static int mode_bench(int argc, char **argv)
{
    if (argc < 6)
        die_msg(4, "usage: bench FILE h264|hevc SESSIONS SECONDS");
    const char *cname = argv[3];
    cudaVideoCodec codec = parse_codec(cname);
    int n = atoi(argv[4]);
    g_secs = atof(argv[5]);
    if (n < 1 || n > 128 || g_secs <= 0)
        die_msg(4, "bad SESSIONS/SECONDS");
    size_t size;
    unsigned char *data = read_file(argv[2], &size);
    load_cuda();
    load_cuvid();
    init_context();
    size_t free0 = 0, free1 = 0, total = 0;
    CK(p_cuMemGetInfo(&free0, &total));

    Session *ss = calloc((size_t)n, sizeof *ss);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!ss || !th)
        die_msg(4, "out of memory");
    if (pthread_barrier_init(&g_bar, NULL, (unsigned)n + 1))
        die_msg(4, "pthread_barrier_init failed");
    for (int i = 0; i < n; i++) {
        ss[i].id = i;
        ss[i].mode = MODE_BENCH;
        ss[i].codec = codec;
        ss[i].data = data;
        ss[i].size = size;
        if (pthread_create(&th[i], NULL, bench_thread, &ss[i]))
            die_msg(4, "pthread_create failed");
    }
    pthread_barrier_wait(&g_bar);
    CK(p_cuMemGetInfo(&free1, &total));
    double used0 = (double)(total - free0) / 1048576.0, used1 = (double)(total - free1) / 1048576.0;
    fprintf(g_diag, "RESULT mem_%s_s%d used_mib=%.0f delta_mib=%.1f per_session_mib=%.1f\n", cname, n,
            used1, used1 - used0, (used1 - used0) / n);
    double cpu0 = cpu_seconds();
    g_t0 = now_s();
    pthread_barrier_wait(&g_bar);
    long long frames = 0;
    double t_end = g_t0, fmin = 1e30, fmax = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        frames += ss[i].frames;
        if (ss[i].t_end > t_end)
            t_end = ss[i].t_end;
        double f = ss[i].frames / (ss[i].t_end - g_t0);
        fmin = f < fmin ? f : fmin;
        fmax = f > fmax ? f : fmax;
    }
    double secs = t_end - g_t0, cpu = cpu_seconds() - cpu0;
    fprintf(g_diag, "RESULT bench_%s_s%d fps=%.1f frames=%lld secs=%.2f per_session_fps_min=%.1f max=%.1f cpu_s=%.1f\n",
            cname, n, frames / secs, frames, secs, fmin, fmax, cpu);
    pthread_barrier_destroy(&g_bar);
    release_context();
    free(ss);
    free(th);
    free(data);
    return frames > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    g_diag = stdout;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s caps | hash FILE h264|hevc [OUT|-] [hwcrop] | rawhash W H [BPS] |"
                        " bench FILE h264|hevc SESSIONS SECONDS\n", argv[0]);
        return 4;
    }
    g_mode = argv[1];
    if (!strcmp(argv[1], "caps"))
        return mode_caps();
    if (!strcmp(argv[1], "hash"))
        return mode_hash(argc, argv);
    if (!strcmp(argv[1], "rawhash"))
        return mode_rawhash(argc, argv);
    if (!strcmp(argv[1], "bench"))
        return mode_bench(argc, argv);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 4;
}
