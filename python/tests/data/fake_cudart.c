/* fake_cudart.c - a stand-in for libcudart and libcuda's IPC entry points, for
 * tests/test_device_ctypes.py: it checks the ctypes calling convention of
 * weft/_device.py's _CudaRT (the 64-byte handles go BY VALUE, pointers come
 * back through out-parameters), which otherwise only a GPU would exercise.
 * A memory handle's first 8 bytes are the pointer it opens to; its last byte
 * must be 0x5a (a caller that passed a pointer to the handle instead of the
 * handle fails that check).
 *
 * The driver API's entry points (cu*) need a current context on the calling
 * thread, as libcuda's do: each thread has its own stack of contexts
 * (cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2); a cu* call with none fails
 * with CUDA_ERROR_INVALID_CONTEXT (201) and is counted (fake_no_context),
 * and one whose current context is not the device's primary context
 * (cuDevicePrimaryCtxRetain's) fails so too (fake_wrong_context). The
 * runtime's (cuda*) entry points make their device's context current
 * themselves and need none. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct { char reserved[64]; } handle64;

#define INVALID_CONTEXT 201
#define PRIMARY 0xC7C70000u /* the primary context of device d is PRIMARY + d */
static __thread uint64_t ctx_stack[16];
static __thread int ctx_depth;
static int initialised, retained, n_no_context, n_wrong_context;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static int need_ctx(void)
{
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (!ctx_depth) {
        n_no_context++;
        rc = INVALID_CONTEXT;
    } else if (ctx_stack[ctx_depth - 1] < PRIMARY || ctx_stack[ctx_depth - 1] >= PRIMARY + 16 || !retained) {
        n_wrong_context++;
        rc = INVALID_CONTEXT;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}
#define NEED_CTX() do { int rc_ = need_ctx(); if (rc_) return rc_; } while (0)

int cuInit(unsigned flags) { if (flags) return 1; initialised = 1; return 0; }
int cuDeviceGet(int *dev, int ordinal) { if (!initialised) return 3; if (ordinal < 0 || ordinal > 7) return 101; *dev = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(uint64_t *ctx, int dev)
{
    if (!initialised) return 3; /* CUDA_ERROR_NOT_INITIALIZED */
    pthread_mutex_lock(&mu);
    retained++;
    pthread_mutex_unlock(&mu);
    *ctx = PRIMARY + (uint64_t)dev;
    return 0;
}
int cuDevicePrimaryCtxRelease_v2(int dev)
{
    (void)dev;
    pthread_mutex_lock(&mu);
    int rc = retained ? (retained--, 0) : 1;
    pthread_mutex_unlock(&mu);
    return rc;
}
int cuCtxPushCurrent_v2(uint64_t ctx)
{
    if (!ctx || ctx_depth == 16) return 1;
    ctx_stack[ctx_depth++] = ctx;
    return 0;
}
int cuCtxPopCurrent_v2(uint64_t *ctx)
{
    if (!ctx_depth) return INVALID_CONTEXT;
    uint64_t c = ctx_stack[--ctx_depth];
    if (ctx) *ctx = c;
    return 0;
}
/* a context of the test's own on this thread (not the primary one): the driver calls must push theirs over it */
int fake_push_other_context(void) { return cuCtxPushCurrent_v2(0xAAAA0000u); }
uint64_t fake_current_context(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : 0; }
int fake_no_context(void) { return n_no_context; }
int fake_wrong_context(void) { return n_wrong_context; }
int fake_retained(void) { return retained; }

static uint64_t last_stream, last_event, last_closed;
static unsigned last_flags;

static int open_mem(uint64_t *out, handle64 h, unsigned flags)
{
    if ((unsigned char)h.reserved[63] != 0x5a) return 400; /* invalid handle */
    memcpy(out, h.reserved, 8);
    last_flags = flags;
    return 0;
}

int cudaIpcOpenMemHandle(void **p, handle64 h, unsigned flags) { return open_mem((uint64_t *)p, h, flags); }
int cuIpcOpenMemHandle_v2(uint64_t *p, handle64 h, unsigned flags) { NEED_CTX(); return open_mem(p, h, flags); }
int cudaIpcCloseMemHandle(void *p) { last_closed = (uint64_t)(uintptr_t)p; return 0; }
int cuIpcCloseMemHandle(uint64_t p) { NEED_CTX(); last_closed = p; return 0; }

static int open_event(void **ev, handle64 h)
{
    if ((unsigned char)h.reserved[63] != 0x5a) return 400;
    uint64_t v;
    memcpy(&v, h.reserved + 8, 8);
    *ev = (void *)(uintptr_t)v;
    return 0;
}
int cudaIpcOpenEventHandle(void **ev, handle64 h) { return open_event(ev, h); }
int cuIpcOpenEventHandle(void **ev, handle64 h) { NEED_CTX(); return open_event(ev, h); }

static int wait(void *stream, void *event, unsigned flags)
{
    if (flags != 0) return 1;
    last_stream = (uint64_t)(uintptr_t)stream;
    last_event = (uint64_t)(uintptr_t)event;
    return 0;
}
int cudaStreamWaitEvent(void *s, void *e, unsigned f) { return wait(s, e, f); }
int cuStreamWaitEvent(void *s, void *e, unsigned f) { NEED_CTX(); return wait(s, e, f); }

static uint64_t last_destroyed;
static int n_destroyed;
int cudaEventDestroy(void *e) { last_destroyed = (uint64_t)(uintptr_t)e; n_destroyed++; return 0; }
int cuEventDestroy_v2(void *e) { NEED_CTX(); last_destroyed = (uint64_t)(uintptr_t)e; n_destroyed++; return 0; }

/* the loader's own release events: created interprocess, exported, recorded on a stream */
static unsigned last_create_flags;
static uint64_t next_event = 0x9000, last_record_event, last_record_stream;
static int create_event(void **ev, unsigned flags)
{
    last_create_flags = flags;
    *ev = (void *)(uintptr_t)(next_event += 0x10);
    return 0;
}
int cudaEventCreateWithFlags(void **ev, unsigned flags) { return create_event(ev, flags); }
int cuEventCreate(void **ev, unsigned flags) { NEED_CTX(); return create_event(ev, flags); }
static int event_handle(handle64 *h, void *ev)
{
    uint64_t v = (uint64_t)(uintptr_t)ev;
    memset(h, 0, sizeof *h);
    memcpy(h->reserved + 8, &v, 8);
    h->reserved[63] = 0x5a;
    return 0;
}
int cudaIpcGetEventHandle(handle64 *h, void *ev) { return event_handle(h, ev); }
int cuIpcGetEventHandle(handle64 *h, void *ev) { NEED_CTX(); return event_handle(h, ev); }
static int record(void *ev, void *stream)
{
    last_record_event = (uint64_t)(uintptr_t)ev;
    last_record_stream = (uint64_t)(uintptr_t)stream;
    return 0;
}
int cudaEventRecord(void *ev, void *s) { return record(ev, s); }
int cuEventRecord(void *ev, void *s) { NEED_CTX(); return record(ev, s); }

const char *cudaGetErrorString(int rc) { return rc == 400 ? "invalid resource handle" : "unknown error"; }
int cuGetErrorString(int rc, const char **s)
{
    *s = rc == 400 ? "CUDA_ERROR_INVALID_HANDLE" : rc == INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_UNKNOWN";
    return 0;
}

/* for the test to read back what the calls received */
uint64_t fake_last_stream(void) { return last_stream; }
uint64_t fake_last_event(void) { return last_event; }
uint64_t fake_last_closed(void) { return last_closed; }
unsigned fake_last_flags(void) { return last_flags; }
uint64_t fake_last_destroyed(void) { return last_destroyed; }
int fake_destroyed(void) { return n_destroyed; }
unsigned fake_last_create_flags(void) { return last_create_flags; }
uint64_t fake_last_record_event(void) { return last_record_event; }
uint64_t fake_last_record_stream(void) { return last_record_stream; }
