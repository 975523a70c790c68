/*
 * fake_driver.c - a CPU stand-in for BOTH libcuda.so.1 and libnvcuvid.so.1, for package gpu's
 * tests on machines without a GPU (CI). Adapted from ../../../../shared/tools/gpu-probe/mock_driver.c
 * (same NVDEC contract checks: junk outside the picture, padded pitch, guard page after each mapped
 * frame, CurrPicIdx bounds, surface reuse, context-current), plus what Weft's gpu package calls:
 * packet timestamps carried to CUVIDPARSERDISPINFO.timestamp, host<->device copies, events, modules
 * and cuLaunchKernel running the kernels of gpu/kernels/rgb.cu on the CPU (weft_yuv420_to_rgb and the
 * resize's weft_yuv420_to_rgb_vresize and weft_rgb_hresize: the same statements, per thread), H.264,
 * HEVC and AV1 (libavcodec's parsers and decoders; AV1 packets checked as the real parser takes them,
 * the CUVIDEOFORMATEX form of the sequence callback, the operating point callback), $MOCK_DENY_CODECS
 * to deny codecs in the caps, cuIpc* handles (a 64-byte
 * handle holding the pointer), interprocess events and stream waits that model ordering (a client's
 * fake event file: see "events and stream waits" below), call counters for tests (fake_stats). Device memory is host memory.
 * It says nothing about the real driver. Built by the tests with:
 *   gcc -O2 -fPIC -shared -I../../include -o libfake.so fake_driver.c -lavcodec -lavutil
 */
#define _GNU_SOURCE
/* the resize's float32 sums round every product and sum, as the PTX (mul.rn/add.rn) and gpu.ResizeRGB do */
#pragma GCC optimize("fp-contract=off")
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ffnvcodec/dynlink_cuda.h>
#include <ffnvcodec/dynlink_nvcuvid.h>
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>

#define EXPORT __attribute__((visibility("default")))
#define NOT_SUPPORTED 801
#define INVALID_VALUE 1
#define INVALID_CONTEXT 201
#define MOCK_FAIL(code, ...) do { fprintf(stderr, "MOCK: " __VA_ARGS__); fprintf(stderr, "\n"); return (CUresult)(code); } while (0)

/* symbols the ffnvcodec loader insists on but the probe never calls */
#define STUB(name) EXPORT int name(void) { return NOT_SUPPORTED; }

/* ============================================================== libcuda */
static atomic_llong g_alloc;
/* 0 decoders created, 1 pictures decoded, 2 frames mapped, 3 frames displayed, 4 bytes copied device->host, 5 kernel launches, 6 parsers created */
static atomic_llong g_stats[8];
EXPORT void fake_stats(long long *out) { for (int i = 0; i < 8; i++) out[i] = atomic_load(&g_stats[i]); }

static __thread int tl_depth;                 /* context stack depth of this thread */
#define CTX_DUMMY ((CUcontext)(uintptr_t)0xC0DE0000)

EXPORT void mock_cuda_account(long long bytes) { atomic_fetch_add(&g_alloc, bytes); }
EXPORT int mock_cuda_ctx_depth(void) { return tl_depth; }

EXPORT CUresult cuInit(unsigned int f)
{
    (void)f;
    const char *e = getenv("MOCK_CUINIT_ERROR");
    return e ? (CUresult)atoi(e) : CUDA_SUCCESS;
}
EXPORT CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int i) { if (i) return INVALID_VALUE; *d = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetName(char *s, int n, CUdevice d)
{
    (void)d;
    snprintf(s, (size_t)n, "MOCK (CPU/libavcodec, not a GPU)");
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned f) { (void)d; (void)f; return CUDA_SUCCESS; }
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = CTX_DUMMY; return CUDA_SUCCESS; }
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d) { (void)d; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
    if (c != CTX_DUMMY) MOCK_FAIL(INVALID_CONTEXT, "cuCtxPushCurrent: bad context");
    tl_depth++;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
    if (tl_depth <= 0) MOCK_FAIL(INVALID_CONTEXT, "cuCtxPopCurrent with no current context");
    tl_depth--;
    if (c) *c = CTX_DUMMY;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *fr, size_t *tot)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuMemGetInfo without context");
    *tot = 141ULL << 30;
    *fr = *tot - (size_t)(512ULL << 20) - (size_t)atomic_load(&g_alloc);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuMemAlloc without context");
    size_t *b = malloc(n + 16);
    if (!b) return (CUresult)2;
    b[0] = n;
    mock_cuda_account((long long)n);
    *p = (CUdeviceptr)(uintptr_t)(b + 2);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    size_t *b = (size_t *)(uintptr_t)p - 2;
    mock_cuda_account(-(long long)b[0]);
    free(b);
    return CUDA_SUCCESS;
}
static CUresult copy2d(const CUDA_MEMCPY2D *m)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuMemcpy2D without context");
    if (m->srcMemoryType == CU_MEMORYTYPE_ARRAY || m->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        MOCK_FAIL(NOT_SUPPORTED, "arrays not mocked");
    if (m->WidthInBytes > m->srcPitch || m->WidthInBytes > m->dstPitch)
        MOCK_FAIL(INVALID_VALUE, "cuMemcpy2D: WidthInBytes %zu > pitch (src %zu dst %zu)",
                  m->WidthInBytes, m->srcPitch, m->dstPitch);
    const char *s = m->srcMemoryType == CU_MEMORYTYPE_HOST ? m->srcHost : (const char *)(uintptr_t)m->srcDevice;
    char *d = m->dstMemoryType == CU_MEMORYTYPE_HOST ? m->dstHost : (char *)(uintptr_t)m->dstDevice;
    s += m->srcY * m->srcPitch + m->srcXInBytes;
    d += m->dstY * m->dstPitch + m->dstXInBytes;
    for (size_t r = 0; r < m->Height; r++)
        memcpy(d + r * m->dstPitch, s + r * m->srcPitch, m->WidthInBytes);
    if (m->dstMemoryType == CU_MEMORYTYPE_HOST && m->srcMemoryType == CU_MEMORYTYPE_DEVICE)
        atomic_fetch_add(&g_stats[4], (long long)(m->Height * m->WidthInBytes));
    return CUDA_SUCCESS;
}
/* ---- events and stream waits (gpu/shmevent.go has the event's words) ----
 * An event is 64 bytes: "WEFTEVT1", then uint64 words recorded, completed, waits, blocked. The fake's
 * own events (cuEventCreate) are heap memory; an event opened by cuIpcOpenEventHandle from a path
 * (a client's fake event file: the Python loader's, gpu.ShmEvent) is that file, mapped, so the client
 * decides when its records complete (a held record: a kernel still running on its stream).
 * cuEventQuery (what package gpu polls before a write into a slot with a release event) says
 * CUDA_SUCCESS once completed >= recorded and CUDA_ERROR_NOT_READY before, counting each query in
 * waits and each NOT_READY in blocked. (Package gpu no longer calls the stream waits below: kept as
 * the real driver's.) cuStreamWaitEvent puts a wait on the stream: the count recorded then. The stream's next work
 * (cuLaunchKernel, cuMemcpy2DAsync, cuStreamSynchronize) first waits until the event completed that
 * many records, counting in blocked each wait that had to; past $MOCK_EVENT_WAIT_MS (60000) it fails
 * loudly (CUDA_ERROR_LAUNCH_TIMEOUT). So a write the wait guards cannot happen before the event
 * completes, and a test can see that it waits (blocked) while it holds the event. */
#define EV_MAGIC "WEFTEVT1"
typedef struct { char magic[8]; uint64_t recorded, completed, waits, blocked; char pad[24]; } fake_event;
typedef struct { char reserved[64]; } fake_ipc_handle;
#define MAX_WAITS 16
typedef struct { int n; fake_event *ev[MAX_WAITS]; uint64_t target[MAX_WAITS]; } fake_stream;
#define LAUNCH_TIMEOUT 702

static int is_event(const void *e) { return e && memcmp(((const fake_event *)e)->magic, EV_MAGIC, 8) == 0; }

/* waits until ev completed target records */
static CUresult wait_event(fake_event *ev, uint64_t target)
{
    if (__atomic_load_n(&ev->completed, __ATOMIC_ACQUIRE) >= target) return CUDA_SUCCESS;
    __atomic_fetch_add(&ev->blocked, 1, __ATOMIC_ACQ_REL);
    const char *e = getenv("MOCK_EVENT_WAIT_MS");
    long ms = e ? atol(e) : 60000;
    for (long t = 0; __atomic_load_n(&ev->completed, __ATOMIC_ACQUIRE) < target; t++) {
        if (t >= ms)
            MOCK_FAIL(LAUNCH_TIMEOUT, "stream wait on an event: %llu records completed of %llu after %ld ms",
                      (unsigned long long)__atomic_load_n(&ev->completed, __ATOMIC_ACQUIRE), (unsigned long long)target, ms);
        usleep(1000);
    }
    return CUDA_SUCCESS;
}

/* the stream's waits, before its next work */
static CUresult drain(CUstream st)
{
    fake_stream *fs = (fake_stream *)st;
    if (!fs) return CUDA_SUCCESS;
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < fs->n && !r; i++) r = wait_event(fs->ev[i], fs->target[i]);
    fs->n = 0;
    return r;
}

EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *m) { return copy2d(m); }
EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *m, CUstream s)
{
    CUresult r = drain(s);
    return r ? r : copy2d(m);
}
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned f) { (void)f; *s = (CUstream)calloc(1, sizeof(fake_stream)); return CUDA_SUCCESS; }
EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    if (!tl_depth) return (CUresult)INVALID_CONTEXT;
    return drain(s);
}
EXPORT CUresult cuStreamDestroy_v2(CUstream s) { free(s); return CUDA_SUCCESS; }
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuStreamWaitEvent without context");
    if (!is_event(e) || flags) MOCK_FAIL(INVALID_VALUE, "cuStreamWaitEvent: not an event, or flags %u", flags);
    fake_event *ev = (fake_event *)e;
    __atomic_fetch_add(&ev->waits, 1, __ATOMIC_ACQ_REL);
    uint64_t target = __atomic_load_n(&ev->recorded, __ATOMIC_ACQUIRE);
    fake_stream *fs = (fake_stream *)s;
    if (!fs) return wait_event(ev, target); /* the NULL stream: at once */
    if (fs->n == MAX_WAITS) MOCK_FAIL(INVALID_VALUE, "cuStreamWaitEvent: more than %d waits before any work", MAX_WAITS);
    fs->ev[fs->n] = ev;
    fs->target[fs->n] = target;
    fs->n++;
    return CUDA_SUCCESS;
}
/* the host's poll of an event (package gpu waits for a client's release event with it before a
 * write into the slot): CUDA_SUCCESS once every record so far completed, CUDA_ERROR_NOT_READY before.
 * Counts each query in waits, and each that found the event incomplete in blocked. */
#define NOT_READY 600
EXPORT CUresult cuEventQuery(CUevent e)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuEventQuery without context");
    if (!is_event(e)) MOCK_FAIL(INVALID_VALUE, "cuEventQuery: not an event");
    fake_event *ev = (fake_event *)e;
    __atomic_fetch_add(&ev->waits, 1, __ATOMIC_ACQ_REL);
    uint64_t recorded = __atomic_load_n(&ev->recorded, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&ev->completed, __ATOMIC_ACQUIRE) >= recorded) return CUDA_SUCCESS;
    __atomic_fetch_add(&ev->blocked, 1, __ATOMIC_ACQ_REL);
    return (CUresult)NOT_READY;
}
EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
    switch ((int)r) {
    case 0: *s = "CUDA_SUCCESS"; break;
    case 1: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case 600: *s = "CUDA_ERROR_NOT_READY"; break;
    case 702: *s = "CUDA_ERROR_LAUNCH_TIMEOUT"; break;
    case 801: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *s = NULL; return INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) { return cuGetErrorName(r, s); }

STUB(cuDeviceComputeCapability) STUB(cuCtxCreate_v2) STUB(cuCtxSetLimit) STUB(cuCtxDestroy_v2)
STUB(cuMemAllocPitch_v2) STUB(cuMemAllocManaged) STUB(cuMemsetD8Async) STUB(cuMemcpy) STUB(cuMemcpyAsync)
 STUB(cuMemcpyHtoDAsync_v2)  STUB(cuMemcpyDtoHAsync_v2)
STUB(cuMemcpyDtoD_v2) STUB(cuMemcpyDtoDAsync_v2) STUB(cuCtxGetDevice) STUB(cuDevicePrimaryCtxGetState)
STUB(cuDevicePrimaryCtxReset) STUB(cuStreamQuery) STUB(cuStreamAddCallback) 
 STUB(cuEventSynchronize)
STUB(cuLinkCreate) STUB(cuLinkAddData) STUB(cuLinkComplete) STUB(cuLinkDestroy) 
  STUB(cuModuleGetGlobal) STUB(cuTexObjectCreate)
STUB(cuTexObjectDestroy) STUB(cuGLGetDevices_v2) STUB(cuGraphicsGLRegisterImage)
STUB(cuGraphicsUnregisterResource) STUB(cuGraphicsMapResources) STUB(cuGraphicsUnmapResources)
STUB(cuGraphicsSubResourceGetMappedArray) STUB(cuGraphicsResourceGetMappedPointer_v2)
STUB(cuArray3DCreate_v2) STUB(cuArrayDestroy)
/* optional in the loader; present in real drivers */
 STUB(cuImportExternalMemory) STUB(cuDestroyExternalMemory)
STUB(cuExternalMemoryGetMappedBuffer) STUB(cuExternalMemoryGetMappedMipmappedArray) STUB(cuMipmappedArrayGetLevel)
STUB(cuMipmappedArrayDestroy) STUB(cuImportExternalSemaphore) STUB(cuDestroyExternalSemaphore)
STUB(cuSignalExternalSemaphoresAsync) STUB(cuWaitExternalSemaphoresAsync) STUB(cuEGLStreamProducerConnect)
STUB(cuEGLStreamProducerDisconnect) STUB(cuEGLStreamConsumerDisconnect) STUB(cuEGLStreamProducerPresentFrame)
STUB(cuEGLStreamProducerReturnFrame)


/* ---- what package gpu needs beyond the probe ---- */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuMemcpyHtoD without context");
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuMemcpyDtoH without context");
    memcpy(dst, (const void *)(uintptr_t)src, n);
    atomic_fetch_add(&g_stats[4], (long long)n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) { (void)d; memcpy(u->bytes, "FAKE-GPU-UUID-01", 16); return CUDA_SUCCESS; }
EXPORT CUresult cuEventCreate(CUevent *e, unsigned f)
{
    (void)f;
    fake_event *ev = calloc(1, sizeof *ev);
    memcpy(ev->magic, EV_MAGIC, 8);
    *e = (CUevent)ev;
    return CUDA_SUCCESS;
}
/* events opened from a client's file (cuIpcOpenEventHandle): unmapped, not freed, at destroy */
static pthread_mutex_t g_opened_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_opened[256];
static int forget_opened(void *e)
{
    int found = 0;
    pthread_mutex_lock(&g_opened_mu);
    for (int i = 0; i < 256; i++)
        if (g_opened[i] == e) g_opened[i] = NULL, found = 1;
    pthread_mutex_unlock(&g_opened_mu);
    return found;
}
EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    if (!is_event(e)) MOCK_FAIL(INVALID_VALUE, "cuEventDestroy: not an event");
    if (forget_opened(e)) munmap(e, sizeof(fake_event));
    else free(e);
    return CUDA_SUCCESS;
}
/* the fake's own work is done when its calls return: a record completes at once */
EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    (void)s;
    if (!tl_depth) return (CUresult)INVALID_CONTEXT;
    if (!is_event(e)) MOCK_FAIL(INVALID_VALUE, "cuEventRecord: not an event");
    fake_event *ev = (fake_event *)e;
    uint64_t n = __atomic_add_fetch(&ev->recorded, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&ev->completed, n, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuIpcGetMemHandle(void *h, CUdeviceptr p) { memset(h, 0, 64); memcpy(h, "FAKEIPCM", 8); memcpy((char *)h + 8, &p, sizeof p); return CUDA_SUCCESS; }
EXPORT CUresult cuIpcGetEventHandle(void *h, CUevent e) { memset(h, 0, 64); memcpy(h, "FAKEIPCE", 8); memcpy((char *)h + 8, &e, sizeof e); return CUDA_SUCCESS; }
/* a handle of cuIpcGetEventHandle (this process's event), or the path of a client's fake event file
 * (NUL-terminated in the 64 bytes), mapped */
EXPORT CUresult cuIpcOpenEventHandle(CUevent *e, fake_ipc_handle h)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuIpcOpenEventHandle without context");
    if (memcmp(h.reserved, "FAKEIPCE", 8) == 0) {
        memcpy(e, h.reserved + 8, sizeof *e);
        if (!is_event(*e)) MOCK_FAIL(INVALID_VALUE, "cuIpcOpenEventHandle: not an event");
        return CUDA_SUCCESS;
    }
    char path[65];
    memcpy(path, h.reserved, 64);
    path[64] = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) MOCK_FAIL(INVALID_VALUE, "cuIpcOpenEventHandle: open %s failed", path);
    void *m = mmap(NULL, sizeof(fake_event), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) MOCK_FAIL(INVALID_VALUE, "cuIpcOpenEventHandle: map %s failed", path);
    if (!is_event(m)) {
        munmap(m, sizeof(fake_event));
        MOCK_FAIL(INVALID_VALUE, "cuIpcOpenEventHandle: %s is not a fake event", path);
    }
    pthread_mutex_lock(&g_opened_mu);
    int slot = -1;
    for (int i = 0; i < 256 && slot < 0; i++)
        if (!g_opened[i]) slot = i;
    if (slot >= 0) g_opened[slot] = m;
    pthread_mutex_unlock(&g_opened_mu);
    if (slot < 0) {
        munmap(m, sizeof(fake_event));
        MOCK_FAIL(INVALID_VALUE, "cuIpcOpenEventHandle: more than 256 opened events");
    }
    *e = (CUevent)m;
    return CUDA_SUCCESS;
}

#define FAKE_MODULE ((CUmodule)(uintptr_t)0x40D0)
#define FAKE_RGB ((CUfunction)(uintptr_t)0xF00D)
#define FAKE_VRESIZE ((CUfunction)(uintptr_t)0xF00E)
#define FAKE_HRESIZE ((CUfunction)(uintptr_t)0xF00F)
static const struct { const char *name; CUfunction f; } fake_kernels[] = {
    {"weft_yuv420_to_rgb", FAKE_RGB}, {"weft_yuv420_to_rgb_vresize", FAKE_VRESIZE}, {"weft_rgb_hresize", FAKE_HRESIZE}};
EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuModuleLoadData without context");
    for (size_t i = 0; i < sizeof fake_kernels / sizeof fake_kernels[0]; i++) {
        char entry[128];
        snprintf(entry, sizeof entry, ".entry %s(", fake_kernels[i].name);
        if (!strstr((const char *)image, entry)) MOCK_FAIL(INVALID_VALUE, "module has no %s", fake_kernels[i].name);
    }
    *m = FAKE_MODULE;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleUnload(CUmodule m) { return m == FAKE_MODULE ? CUDA_SUCCESS : (CUresult)INVALID_VALUE; }
EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    if (m != FAKE_MODULE) MOCK_FAIL(500, "no module");
    for (size_t i = 0; i < sizeof fake_kernels / sizeof fake_kernels[0]; i++)
        if (!strcmp(name, fake_kernels[i].name)) {
            *f = fake_kernels[i].f;
            return CUDA_SUCCESS;
        }
    MOCK_FAIL(500, "no function %s", name);
}
static unsigned char clamp8(int v) { return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v); }

/* rgb_at of rgb.cu: the sample at (x, y) converted into o[0..2] */
static void rgb_at(const unsigned char *luma, const unsigned char *chroma, unsigned pitch, unsigned bps, unsigned shift,
                   const short *tables, unsigned n, unsigned x, unsigned y, unsigned char *o)
{
    unsigned Y, U, V;
    const unsigned char *c = chroma + (size_t)(y >> 1) * pitch;
    if (bps == 1) {
        Y = luma[(size_t)y * pitch + x]; U = c[(x >> 1) * 2]; V = c[(x >> 1) * 2 + 1];
    } else {
        uint16_t t;
        memcpy(&t, luma + (size_t)y * pitch + 2 * x, 2); Y = t >> shift;
        memcpy(&t, c + (x >> 1) * 4, 2); U = t >> shift;
        memcpy(&t, c + (x >> 1) * 4 + 2, 2); V = t >> shift;
    }
    if (Y >= n) Y = n - 1;
    if (U >= n) U = n - 1;
    if (V >= n) V = n - 1;
    int ty = tables[Y];
    o[0] = clamp8((ty + tables[n + V]) >> 5);
    o[1] = clamp8((ty + tables[2 * n + U] + tables[3 * n + V]) >> 5);
    o[2] = clamp8((ty + tables[4 * n + U]) >> 5);
}

/* f32_to_f16, f32_to_bf16 and put of rgb.cu: the normalised write (out_kind 1 float32, 2 float16,
 * 3 bfloat16; 0 uint8) of a pixel's values, the same statements */
static unsigned short f32_to_f16(float f)
{
    unsigned int x;
    memcpy(&x, &f, 4);
    unsigned int sign = (x >> 16) & 0x8000u;
    unsigned int a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
    if (a >= 0x38800000u) {
        unsigned int r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (unsigned short)(sign | (r >> 13));
    }
    if (a <= 0x33000000u) return (unsigned short)sign;
    unsigned int e = a >> 23;
    unsigned int m = (a & 0x7fffffu) | 0x800000u;
    unsigned int shift = 126u - e;
    unsigned int q = m >> shift;
    unsigned int rem = m & ((1u << shift) - 1u);
    unsigned int half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (unsigned short)(sign | q);
}

static unsigned short f32_to_bf16(float f)
{
    unsigned int x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static void put(unsigned char *row, unsigned x, const unsigned char *o, unsigned kind, const float *norm)
{
    if (kind == 0) {
        row[3 * x] = o[0];
        row[3 * x + 1] = o[1];
        row[3 * x + 2] = o[2];
        return;
    }
    for (int c = 0; c < 3; c++) {
        float q = (float)o[c] / 255.0f;
        float y = (q + -norm[c]) / norm[3 + c];
        unsigned char *p = row + (size_t)3 * x * (kind == 1 ? 4 : 2) + (size_t)c * (kind == 1 ? 4 : 2);
        if (kind == 1) {
            memcpy(p, &y, 4);
        } else {
            unsigned short h = kind == 2 ? f32_to_f16(y) : f32_to_bf16(y);
            memcpy(p, &h, 2);
        }
    }
}

/* the kernel arguments out_kind, mean[3], std[3] at a[i..i+6] */
static unsigned launch_norm(void **a, int i, float *norm)
{
    for (int c = 0; c < 6; c++) norm[c] = *(float *)a[i + 1 + c];
    return *(unsigned *)a[i];
}

/* cvt.rni.s32.f32 / __float2int_rn: round half to even (the default rounding mode) */
static int rint_i(float v) { return (int)__builtin_rintf(v); }

/* the kernels of gpu/kernels/rgb.cu, their statements run for every (block, thread) */
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned shm, CUstream st, void **a, void **extra)
{
    (void)shm; (void)extra;
    if (!tl_depth) MOCK_FAIL(INVALID_CONTEXT, "cuLaunchKernel without context");
    CUresult wr = drain(st); /* the stream's waits on events first (cuStreamWaitEvent) */
    if (wr) return wr;
    if ((f != FAKE_RGB && f != FAKE_VRESIZE && f != FAKE_HRESIZE) || gz != 1 || bz != 1 || !a)
        MOCK_FAIL(INVALID_VALUE, "launch: bad function or grid");
    atomic_fetch_add(&g_stats[5], 1);
    if (f == FAKE_RGB) {
        const unsigned char *luma = *(const unsigned char **)a[0], *chroma = *(const unsigned char **)a[1];
        unsigned pitch = *(unsigned *)a[2], bps = *(unsigned *)a[3], shift = *(unsigned *)a[4];
        unsigned char *dst = *(unsigned char **)a[5];
        unsigned dpitch = *(unsigned *)a[6], width = *(unsigned *)a[7], height = *(unsigned *)a[8];
        const short *tables = *(const short **)a[9];
        unsigned n = *(unsigned *)a[10];
        float norm[6];
        unsigned kind = launch_norm(a, 11, norm);
        if (kind > 3) MOCK_FAIL(INVALID_VALUE, "launch: out_kind %u", kind);
        if (gx * bx < width || gy * by < height) MOCK_FAIL(INVALID_VALUE, "launch: grid smaller than the picture");
        for (unsigned y = 0; y < height; y++)
            for (unsigned x = 0; x < width; x++) {
                unsigned char o[3];
                rgb_at(luma, chroma, pitch, bps, shift, tables, n, x, y, o);
                put(dst + (size_t)y * dpitch, x, o, kind, norm);
            }
        return CUDA_SUCCESS;
    }
    if (f == FAKE_VRESIZE) {
        const unsigned char *luma = *(const unsigned char **)a[0], *chroma = *(const unsigned char **)a[1];
        unsigned pitch = *(unsigned *)a[2], bps = *(unsigned *)a[3], shift = *(unsigned *)a[4];
        const short *tables = *(const short **)a[5];
        unsigned n = *(unsigned *)a[6];
        float *tmp = *(float **)a[7];
        unsigned width = *(unsigned *)a[8], out_h = *(unsigned *)a[9];
        const int *filter = *(const int **)a[10];
        unsigned taps = *(unsigned *)a[11];
        if (gx * bx < width || gy * by < out_h) MOCK_FAIL(INVALID_VALUE, "launch: grid smaller than the intermediate");
        for (unsigned oy = 0; oy < out_h; oy++)
            for (unsigned x = 0; x < width; x++) {
                int start = filter[oy], count = filter[out_h + oy];
                const float *w = (const float *)(filter + 2 * out_h) + (size_t)oy * taps;
                float r = 0.0f, g = 0.0f, b = 0.0f;
                unsigned char o[3];
                for (int k = 0; k < count; k++) {
                    rgb_at(luma, chroma, pitch, bps, shift, tables, n, x, (unsigned)(start + k), o);
                    r = r + w[k] * (float)o[0];
                    g = g + w[k] * (float)o[1];
                    b = b + w[k] * (float)o[2];
                }
                float *t = tmp + ((size_t)oy * width + x) * 3;
                t[0] = r;
                t[1] = g;
                t[2] = b;
            }
        return CUDA_SUCCESS;
    }
    const float *tmp = *(const float **)a[0];
    unsigned width = *(unsigned *)a[1];
    unsigned char *dst = *(unsigned char **)a[2];
    unsigned dpitch = *(unsigned *)a[3], out_w = *(unsigned *)a[4], out_h = *(unsigned *)a[5];
    const int *filter = *(const int **)a[6];
    unsigned taps = *(unsigned *)a[7];
    float norm[6];
    unsigned kind = launch_norm(a, 8, norm);
    if (kind > 3) MOCK_FAIL(INVALID_VALUE, "launch: out_kind %u", kind);
    if (gx * bx < out_w || gy * by < out_h) MOCK_FAIL(INVALID_VALUE, "launch: grid smaller than the picture");
    for (unsigned oy = 0; oy < out_h; oy++)
        for (unsigned ox = 0; ox < out_w; ox++) {
            int start = filter[ox], count = filter[out_w + ox];
            const float *w = (const float *)(filter + 2 * out_w) + (size_t)ox * taps;
            const float *row = tmp + (size_t)oy * width * 3;
            float r = 0.0f, g = 0.0f, b = 0.0f;
            for (int k = 0; k < count; k++) {
                const float *p = row + (size_t)(start + k) * 3;
                r = r + p[0] * w[k];
                g = g + p[1] * w[k];
                b = b + p[2] * w[k];
            }
            unsigned char o[3];
            o[0] = clamp8(rint_i(r));
            o[1] = clamp8(rint_i(g));
            o[2] = clamp8(rint_i(b));
            put(dst + (size_t)oy * dpitch, ox, o, kind, norm);
        }
    return CUDA_SUCCESS;
}

/* ============================================================== libnvcuvid */
#define JUNK 0xA5
static int ctx_current(void) { return tl_depth > 0; }
static void (*p_account)(long long) = mock_cuda_account;
#define NEED_CTX(fn) do { if (!ctx_current()) MOCK_FAIL(INVALID_CONTEXT, fn " called without a current context"); } while (0)

typedef struct {
    CUVIDDECODECREATEINFO ci;
    int bps, nsurf;
    size_t spitch;                  /* surface pitch (coded layout) */
    unsigned char **surf;           /* nsurf surfaces: coded_h luma rows + coded_h/2 chroma rows */
    int mapped;
} MockDec;

static __thread const AVFrame *tl_frame;   /* frame being "decoded" (parser -> decode callback) */

/* $MOCK_DENY_CODECS: a comma-separated list of h264, hevc, av1 that this "NVDEC" lacks (the caps
 * gate's CPU path in tests, as an H100/H200 without a codec would say) */
static int denied(cudaVideoCodec c)
{
    const char *e = getenv("MOCK_DENY_CODECS");
    const char *name = c == cudaVideoCodec_H264 ? "h264" : c == cudaVideoCodec_HEVC ? "hevc" : c == cudaVideoCodec_AV1 ? "av1" : NULL;
    if (!e || !name) return 0;
    size_t n = strlen(name);
    for (const char *p = e; (p = strstr(p, name)); p += n)
        if ((p == e || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

EXPORT CUresult cuvidGetDecoderCaps(CUVIDDECODECAPS *c)
{
    NEED_CTX("cuvidGetDecoderCaps");
    int ok = c->eChromaFormat == cudaVideoChromaFormat_420 && c->nBitDepthMinus8 <= 4 && !denied(c->eCodecType) &&
             (c->eCodecType == cudaVideoCodec_H264 ? c->nBitDepthMinus8 == 0 :
              c->eCodecType == cudaVideoCodec_AV1 ? c->nBitDepthMinus8 <= 2 :
              c->eCodecType == cudaVideoCodec_HEVC || c->eCodecType == cudaVideoCodec_VP9);
    c->bIsSupported = (unsigned char)ok;
    c->nNumNVDECs = ok ? 7 : 0;
    c->nOutputFormatMask = ok ? (c->nBitDepthMinus8 ? 2 : 1) : 0;
    c->nMaxWidth = ok ? 8192 : 0;
    c->nMaxHeight = ok ? 8192 : 0;
    c->nMaxMBCount = ok ? 262144 : 0;
    c->nMinWidth = ok ? 48 : 0;
    c->nMinHeight = ok ? 16 : 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidCreateDecoder(CUvideodecoder *out, CUVIDDECODECREATEINFO *ci)
{
    NEED_CTX("cuvidCreateDecoder");
    if (!ci->ulWidth || !ci->ulHeight || ci->ulNumDecodeSurfaces < 1 || ci->ulNumDecodeSurfaces > 32)
        MOCK_FAIL(INVALID_VALUE, "create: bad size/surfaces");
    if (ci->ChromaFormat != cudaVideoChromaFormat_420 || ci->ulCreationFlags != cudaVideoCreate_PreferCUVID)
        MOCK_FAIL(INVALID_VALUE, "create: bad chroma format / creation flags");
    if (ci->OutputFormat != (ci->bitDepthMinus8 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12))
        MOCK_FAIL(INVALID_VALUE, "create: OutputFormat does not match bitDepthMinus8");
    if ((ci->ulMaxWidth && ci->ulMaxWidth < ci->ulWidth) || (ci->ulMaxHeight && ci->ulMaxHeight < ci->ulHeight))
        MOCK_FAIL(INVALID_VALUE, "create: ulMaxWidth/Height below the coded size");
    if (!ci->ulTargetWidth || !ci->ulTargetHeight || (ci->ulTargetWidth & 1) || (ci->ulTargetHeight & 1) ||
        ci->ulNumOutputSurfaces < 1 || ci->DeinterlaceMode != cudaVideoDeinterlaceMode_Weave)
        MOCK_FAIL(INVALID_VALUE, "create: bad target size / output surfaces / deinterlace");
    int dw = ci->display_area.right - ci->display_area.left, dh = ci->display_area.bottom - ci->display_area.top;
    if (dw || dh) {
        if (ci->display_area.right > (long)ci->ulWidth || ci->display_area.bottom > (long)ci->ulHeight)
            MOCK_FAIL(INVALID_VALUE, "create: display_area outside coded size");
        if ((unsigned long)((dw + 1) & ~1) != ci->ulTargetWidth || (unsigned long)((dh + 1) & ~1) != ci->ulTargetHeight)
            MOCK_FAIL(NOT_SUPPORTED, "create: mock does not scale (display_area size != target size)");
    } else if (ci->ulTargetWidth != ci->ulWidth || ci->ulTargetHeight != ci->ulHeight) {
        MOCK_FAIL(NOT_SUPPORTED, "create: mock does not scale (coded size != target size)");
    }
    MockDec *d = calloc(1, sizeof *d);
    atomic_fetch_add(&g_stats[0], 1);
    d->ci = *ci;
    d->bps = ci->bitDepthMinus8 ? 2 : 1;
    d->nsurf = (int)ci->ulNumDecodeSurfaces;
    d->spitch = ci->ulWidth * (size_t)d->bps;
    d->surf = calloc((size_t)d->nsurf, sizeof *d->surf);
    size_t sz = d->spitch * (ci->ulHeight + ci->ulHeight / 2);
    for (int i = 0; i < d->nsurf; i++) {
        d->surf[i] = malloc(sz);
        memset(d->surf[i], JUNK, sz);
    }
    if (p_account) p_account((long long)(sz * (size_t)d->nsurf));
    *out = d;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidDestroyDecoder(CUvideodecoder h)
{
    MockDec *d = h;
    if (d->mapped) MOCK_FAIL(INVALID_VALUE, "destroy with %d frames still mapped", d->mapped);
    size_t sz = d->spitch * (d->ci.ulHeight + d->ci.ulHeight / 2);
    if (p_account) p_account(-(long long)(sz * (size_t)d->nsurf));
    for (int i = 0; i < d->nsurf; i++) free(d->surf[i]);
    free(d->surf);
    free(d);
    return CUDA_SUCCESS;
}

/* "decode": write tl_frame (planar yuv420p / yuv420p10) into surface CurrPicIdx as NV12/P016 */
EXPORT CUresult cuvidDecodePicture(CUvideodecoder h, CUVIDPICPARAMS *pp)
{
    NEED_CTX("cuvidDecodePicture");
    MockDec *d = h;
    const AVFrame *f = tl_frame;
    if (!f) MOCK_FAIL(INVALID_VALUE, "decode outside the parser's decode callback");
    if (pp->CurrPicIdx < 0 || pp->CurrPicIdx >= d->nsurf)
        MOCK_FAIL(INVALID_VALUE, "CurrPicIdx %d >= ulNumDecodeSurfaces %d", pp->CurrPicIdx, d->nsurf);
    if ((unsigned long)f->width > d->ci.ulWidth || (unsigned long)f->height > d->ci.ulHeight)
        MOCK_FAIL(INVALID_VALUE, "frame larger than decoder");
    unsigned char *s = d->surf[pp->CurrPicIdx];
    size_t sz = d->spitch * (d->ci.ulHeight + d->ci.ulHeight / 2);
    memset(s, JUNK, sz);
    unsigned char *uv = s + d->spitch * d->ci.ulHeight;
    for (int y = 0; y < f->height; y++) {
        const unsigned char *src = f->data[0] + (size_t)y * f->linesize[0];
        if (d->bps == 1) {
            memcpy(s + (size_t)y * d->spitch, src, (size_t)f->width);
        } else {
            for (int x = 0; x < f->width; x++) {
                uint16_t v = (uint16_t)(((const uint16_t *)src)[x] << 6);
                memcpy(s + (size_t)y * d->spitch + 2 * (size_t)x, &v, 2);
            }
        }
    }
    for (int y = 0; y < (f->height + 1) / 2; y++) {
        unsigned char *row = uv + (size_t)y * d->spitch;
        for (int x = 0; x < (f->width + 1) / 2; x++) {
            if (d->bps == 1) {
                row[2 * x] = f->data[1][(size_t)y * f->linesize[1] + x];
                row[2 * x + 1] = f->data[2][(size_t)y * f->linesize[2] + x];
            } else {
                uint16_t u = (uint16_t)(((const uint16_t *)(f->data[1] + (size_t)y * f->linesize[1]))[x] << 6);
                uint16_t v = (uint16_t)(((const uint16_t *)(f->data[2] + (size_t)y * f->linesize[2]))[x] << 6);
                memcpy(row + 4 * (size_t)x, &u, 2);
                memcpy(row + 4 * (size_t)x + 2, &v, 2);
            }
        }
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidGetDecodeStatus(CUvideodecoder h, int idx, CUVIDGETDECODESTATUS *st)
{
    (void)h; (void)idx;
    st->decodeStatus = cuvidDecodeStatus_Success;
    return CUDA_SUCCESS;
}

/* map: post-process (crop to display_area, no scaling) into a fresh buffer with a pitch wider
 * than the row, junk in the padding, and an inaccessible guard page right after it */
EXPORT CUresult cuvidMapVideoFrame64(CUvideodecoder h, int idx, unsigned long long *dptr, unsigned int *pitch,
                                     CUVIDPROCPARAMS *vpp)
{
    NEED_CTX("cuvidMapVideoFrame64");
    MockDec *d = h;
    if (!vpp || idx < 0 || idx >= d->nsurf) MOCK_FAIL(INVALID_VALUE, "map: bad index %d", idx);
    if (d->mapped >= (int)d->ci.ulNumOutputSurfaces) MOCK_FAIL(INVALID_VALUE, "map: too many mapped frames");
    const CUVIDDECODECREATEINFO *ci = &d->ci;
    size_t tw = ci->ulTargetWidth, th = ci->ulTargetHeight, bps = (size_t)d->bps;
    size_t pt = (tw * bps + 511) & ~(size_t)511;
    if (pt == tw * bps) pt += 512;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = pt * (th + th / 2);
    size_t total = (body + page - 1) / page * page + page;
    unsigned char *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) MOCK_FAIL(2, "map: mmap failed");
    mprotect(base + total - page, page, PROT_NONE);
    unsigned char *out = base + (total - page - body);     /* the frame ends right at the guard page */
    memset(base, JUNK, total - page);
    int sx = ci->display_area.left, sy = ci->display_area.top;
    if (!(ci->display_area.right - sx) && !(ci->display_area.bottom - sy)) sx = sy = 0;
    const unsigned char *s = d->surf[idx];
    for (size_t y = 0; y < th; y++)
        memcpy(out + y * pt, s + (sy + y) * d->spitch + (size_t)sx * bps, tw * bps);
    const unsigned char *suv = s + d->spitch * ci->ulHeight;
    for (size_t y = 0; y < th / 2; y++)
        memcpy(out + (th + y) * pt, suv + (sy / 2 + y) * d->spitch + (size_t)(sx & ~1) * bps, tw * bps);
    *dptr = (unsigned long long)(uintptr_t)out;
    *pitch = (unsigned int)pt;
    d->mapped++;
    atomic_fetch_add(&g_stats[2], 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidUnmapVideoFrame64(CUvideodecoder h, unsigned long long p)
{
    MockDec *d = h;
    if (d->mapped <= 0 || !p) MOCK_FAIL(INVALID_VALUE, "unmap: nothing mapped");
    size_t tw = d->ci.ulTargetWidth, th = d->ci.ulTargetHeight, bps = (size_t)d->bps;
    size_t pt = (tw * bps + 511) & ~(size_t)511;
    if (pt == tw * bps) pt += 512;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = pt * (th + th / 2);
    size_t total = (body + page - 1) / page * page + page;
    munmap((unsigned char *)(uintptr_t)p - (total - page - body), total);
    d->mapped--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidCtxLockCreate(CUvideoctxlock *l, CUcontext c) { (void)c; *l = (CUvideoctxlock)malloc(1); return CUDA_SUCCESS; }
EXPORT CUresult cuvidCtxLockDestroy(CUvideoctxlock l) { free(l); return CUDA_SUCCESS; }
EXPORT CUresult cuvidCtxLock(CUvideoctxlock l, unsigned f) { (void)l; (void)f; return CUDA_SUCCESS; }
EXPORT CUresult cuvidCtxUnlock(CUvideoctxlock l, unsigned f) { (void)l; (void)f; return CUDA_SUCCESS; }

/* ---- parser: libavcodec parser + decoder; frames come out in display order ---- */
typedef struct {
    CUVIDPARSERPARAMS p;
    enum AVCodecID id;
    AVCodecContext *avc;
    AVCodecParserContext *pc;
    AVPacket *pkt;
    AVFrame *frm;
    int have_seq, nsurf, next, err;
    int queue[64], qlen;
    long long qts[64];            /* decoded, waiting for display (ulMaxDisplayDelay) */
    CUVIDEOFORMAT fmt;
    /* AV1: the sequence header from pExtVideoInfo or a packet, needed before the first frame */
    int av1_seqhdr_seen;
    unsigned ext_seqhdr_len;
} MockParser;

/* AV1 packets as the real parser takes them with bAnnexb 0: low-overhead OBUs, each with its
 * size field, inside the packet; a frame only after a sequence header */
static int check_av1_packet(MockParser *m, const uint8_t *b, int size)
{
    for (int p = 0; p < size;) {
        uint8_t h = b[p];
        int type = (h >> 3) & 15, hl = (h & 4) ? 2 : 1;
        if (h & 0x80) { fprintf(stderr, "MOCK: AV1 OBU at %d: forbidden bit\n", p); return -1; }
        if (!(h & 2)) { fprintf(stderr, "MOCK: AV1 OBU at %d: no obu_has_size_field\n", p); return -1; }
        if (p + hl > size) { fprintf(stderr, "MOCK: AV1 OBU at %d: truncated header\n", p); return -1; }
        unsigned long long v = 0;
        int i = 0;
        for (;; i++) {
            if (i == 8 || p + hl + i >= size) { fprintf(stderr, "MOCK: AV1 OBU at %d: bad leb128\n", p); return -1; }
            v |= (unsigned long long)(b[p + hl + i] & 0x7f) << (7 * i);
            if (!(b[p + hl + i] & 0x80)) break;
        }
        p += hl + i + 1;
        if (v > (unsigned long long)(size - p)) { fprintf(stderr, "MOCK: AV1 OBU overruns the packet\n"); return -1; }
        if (type == 1) m->av1_seqhdr_seen = 1;
        if ((type == 3 || type == 6) && !m->av1_seqhdr_seen) {
            fprintf(stderr, "MOCK: AV1 frame before any sequence header\n");
            return -1;
        }
        p += (int)v;
    }
    return 0;
}

static int open_codec(MockParser *m)
{
    const AVCodec *c = avcodec_find_decoder(m->id);
    m->avc = avcodec_alloc_context3(c);
    m->avc->thread_count = 1;
    m->pc = av_parser_init(m->id);
    return c && m->avc && m->pc && avcodec_open2(m->avc, c, NULL) == 0 ? 0 : -1;
}

static int display_one(MockParser *m)
{
    CUVIDPARSERDISPINFO di;
    memset(&di, 0, sizeof di);
    di.picture_index = m->queue[0];
    di.progressive_frame = 1;
    di.timestamp = m->qts[0];
    m->qlen--;
    memmove(m->queue, m->queue + 1, sizeof(int) * (size_t)m->qlen);
    memmove(m->qts, m->qts + 1, sizeof(long long) * (size_t)m->qlen);
    atomic_fetch_add(&g_stats[3], 1);
    return m->p.pfnDisplayPicture(m->p.pUserData, &di);
}

static int deliver(MockParser *m, const AVFrame *f)
{
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get((enum AVPixelFormat)f->format);
    if (desc->log2_chroma_w != 1 || desc->log2_chroma_h != 1 || desc->nb_components < 3) {
        fprintf(stderr, "MOCK: %s is not 4:2:0\n", desc->name);
        return -1;
    }
    CUVIDEOFORMATEX fx;                /* AV1: the extended form, as the real parser hands it with a sequence header */
    memset(&fx, 0, sizeof fx);
    CUVIDEOFORMAT fmt;
    memset(&fmt, 0, sizeof fmt);
    fmt.codec = m->p.CodecType;
    fmt.progressive_sequence = 1;
    fmt.bit_depth_luma_minus8 = fmt.bit_depth_chroma_minus8 = (unsigned char)(desc->comp[0].depth - 8);
    fmt.min_num_decode_surfaces = (unsigned char)(getenv("MOCK_MIN_SURFACES") ? atoi(getenv("MOCK_MIN_SURFACES")) : 6);
    fmt.coded_width = (unsigned)m->avc->coded_width;
    fmt.coded_height = (unsigned)m->avc->coded_height;
    fmt.display_area.right = f->width;
    fmt.display_area.bottom = f->height;
    fmt.chroma_format = cudaVideoChromaFormat_420;
    /* like the real parser (as far as we know), repeat the callback at every key frame */
    if (!m->have_seq || memcmp(&fmt, &m->fmt, sizeof fmt) || f->key_frame) {
        CUVIDEOFORMAT *arg = &fmt;
        if (m->p.CodecType == cudaVideoCodec_AV1) {
            if (!m->have_seq && m->p.pfnGetOperatingPoint) {
                CUVIDOPERATINGPOINTINFO op;
                memset(&op, 0, sizeof op);
                op.codec = cudaVideoCodec_AV1;
                op.av1.operating_points_cnt = 1;
                int r = m->p.pfnGetOperatingPoint(m->p.pUserData, &op);
                if (r < 0 || (r & 1023) >= 1) { fprintf(stderr, "MOCK: operating point callback returned %d\n", r); return -1; }
            }
            fx.format = fmt;
            fx.format.seqhdr_data_length = m->ext_seqhdr_len ? m->ext_seqhdr_len : 1;
            fx.av1.max_width = fmt.coded_width;
            fx.av1.max_height = fmt.coded_height;
            arg = &fx.format;
        }
        int r = m->p.pfnSequenceCallback(m->p.pUserData, arg);
        if (r == 0) {
            fprintf(stderr, "MOCK: sequence callback returned 0\n");
            return -1;
        }
        if (!m->have_seq) m->nsurf = r > 1 ? r : (int)m->p.ulMaxNumDecodeSurfaces;
        m->have_seq = 1;
        m->fmt = fmt;
    }
    int slot = m->next++ % m->nsurf;
    for (int i = 0; i < m->qlen; i++)
        if (m->queue[i] == slot) { fprintf(stderr, "MOCK: surface %d reused before display (too few surfaces)\n", slot); return -1; }
    CUVIDPICPARAMS pp;
    memset(&pp, 0, sizeof pp);
    pp.CurrPicIdx = slot;
    pp.PicWidthInMbs = (int)((fmt.coded_width + 15) / 16);
    pp.FrameHeightInMbs = (int)((fmt.coded_height + 15) / 16);
    tl_frame = f;
    atomic_fetch_add(&g_stats[1], 1);
    int r = m->p.pfnDecodePicture(m->p.pUserData, &pp);
    tl_frame = NULL;
    if (!r) return -1;
    m->qts[m->qlen] = f->pts;
    m->queue[m->qlen++] = slot;
    while (m->qlen > (int)m->p.ulMaxDisplayDelay)
        if (!display_one(m)) return -1;
    return 0;
}

static int decode_packet(MockParser *m, const uint8_t *data, int size, long long pts)
{
    m->pkt->pts = pts;
    int r;
    if (data) {
        m->pkt->data = (uint8_t *)data;
        m->pkt->size = size;
        r = avcodec_send_packet(m->avc, m->pkt);
    } else {
        r = avcodec_send_packet(m->avc, NULL);
    }
    if (r < 0 && r != AVERROR_EOF) return -1;
    while ((r = avcodec_receive_frame(m->avc, m->frm)) == 0) {
        int e = deliver(m, m->frm);
        av_frame_unref(m->frm);
        if (e) return -1;
    }
    return (r == AVERROR(EAGAIN) || r == AVERROR_EOF) ? 0 : -1;
}

EXPORT CUresult cuvidCreateVideoParser(CUvideoparser *out, CUVIDPARSERPARAMS *p)
{
    MockParser *m = calloc(1, sizeof *m);
    atomic_fetch_add(&g_stats[6], 1);
    m->p = *p;
    m->id = p->CodecType == cudaVideoCodec_H264 ? AV_CODEC_ID_H264 :
            p->CodecType == cudaVideoCodec_HEVC ? AV_CODEC_ID_HEVC :
            p->CodecType == cudaVideoCodec_AV1 ? AV_CODEC_ID_AV1 : AV_CODEC_ID_NONE;
    if (p->bAnnexb) MOCK_FAIL(NOT_SUPPORTED, "parser: AV1 Annex-B is not mocked (MP4 carries low-overhead OBUs)");
    if (p->pExtVideoInfo && p->pExtVideoInfo->format.seqhdr_data_length) {
        if (p->pExtVideoInfo->format.seqhdr_data_length > sizeof p->pExtVideoInfo->raw_seqhdr_data)
            MOCK_FAIL(INVALID_VALUE, "parser: pExtVideoInfo sequence header longer than raw_seqhdr_data");
        m->ext_seqhdr_len = p->pExtVideoInfo->format.seqhdr_data_length;
        if (m->id == AV_CODEC_ID_AV1 && check_av1_packet(m, p->pExtVideoInfo->raw_seqhdr_data, (int)m->ext_seqhdr_len))
            MOCK_FAIL(INVALID_VALUE, "parser: bad AV1 sequence header in pExtVideoInfo");
    }
    if (m->id == AV_CODEC_ID_NONE || !p->pfnSequenceCallback || !p->pfnDecodePicture || !p->pfnDisplayPicture)
        MOCK_FAIL(NOT_SUPPORTED, "parser: codec not mocked or callback missing");
    if (p->ulMaxDisplayDelay > 32) MOCK_FAIL(INVALID_VALUE, "parser: display delay");
    m->pkt = av_packet_alloc();
    m->frm = av_frame_alloc();
    if (open_codec(m)) MOCK_FAIL(NOT_SUPPORTED, "parser: libavcodec init failed");
    *out = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidParseVideoData(CUvideoparser h, CUVIDSOURCEDATAPACKET *pkt)
{
    NEED_CTX("cuvidParseVideoData");
    MockParser *m = h;
    const uint8_t *data = pkt->payload;
    int size = (int)pkt->payload_size, eos = (pkt->flags & CUVID_PKT_ENDOFSTREAM) != 0;
    if (m->id == AV_CODEC_ID_AV1 && size > 0 && check_av1_packet(m, data, size)) return (CUresult)INVALID_VALUE;
    while (size > 0) {
        uint8_t *o = NULL;
        int osz = 0;
        long long ts = (pkt->flags & CUVID_PKT_TIMESTAMP) ? pkt->timestamp : AV_NOPTS_VALUE;
        int used = av_parser_parse2(m->pc, m->avc, &o, &osz, data, size, ts, ts, 0);
        data += used;
        size -= used;
        if (osz && decode_packet(m, o, osz, m->pc->pts)) return (CUresult)999;
    }
    if (eos) {
        uint8_t *o = NULL;
        int osz = 0;
        av_parser_parse2(m->pc, m->avc, &o, &osz, NULL, 0, AV_NOPTS_VALUE, AV_NOPTS_VALUE, 0);
        if (osz && decode_packet(m, o, osz, m->pc->pts)) return (CUresult)999;
        if (decode_packet(m, NULL, 0, AV_NOPTS_VALUE)) return (CUresult)999;
        while (m->qlen)
            if (!display_one(m)) return (CUresult)999;
        avcodec_flush_buffers(m->avc);
        av_parser_close(m->pc);
        m->pc = av_parser_init(m->id);
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuvidDestroyVideoParser(CUvideoparser h)
{
    MockParser *m = h;
    av_parser_close(m->pc);
    avcodec_free_context(&m->avc);
    av_packet_free(&m->pkt);
    av_frame_free(&m->frm);
    free(m);
    return CUDA_SUCCESS;
}

STUB(cuvidReconfigureDecoder) STUB(cuvidMapVideoFrame) STUB(cuvidUnmapVideoFrame) STUB(cuvidCreateVideoSource)
STUB(cuvidCreateVideoSourceW) STUB(cuvidDestroyVideoSource) STUB(cuvidSetVideoSourceState)
STUB(cuvidGetVideoSourceState) STUB(cuvidGetSourceVideoFormat) STUB(cuvidGetSourceAudioFormat)
