/* native.h - the C side of package gpu: the driver loaded with dlopen/dlsym and NVDEC
 * decode sessions. No CUDA header or library is needed at build time: the types come from
 * the vendored MIT ffnvcodec headers (include/ffnvcodec, see its LICENSE). */
#ifndef WEFT_GPU_NATIVE_H
#define WEFT_GPU_NATIVE_H
#include <stddef.h>
#include <stdint.h>
#include <ffnvcodec/dynlink_cuda.h>
#include <ffnvcodec/dynlink_nvcuvid.h>

/* cuIpc* are not in ffnvcodec: declared here from the driver API (cuda.h, CUDA 4.1+). */
typedef struct { char reserved[64]; } wg_ipc_mem_handle;
typedef struct { char reserved[64]; } wg_ipc_event_handle;

typedef struct wg_driver {
    void *hcuda, *hcuvid;
    tcuInit *cuInit;
    CUresult (*cuDriverGetVersion)(int *);
    tcuDeviceGetCount *cuDeviceGetCount;
    tcuDeviceGet *cuDeviceGet;
    tcuDeviceGetName *cuDeviceGetName;
    tcuDeviceGetUuid *cuDeviceGetUuid;
    tcuDeviceGetAttribute *cuDeviceGetAttribute;
    tcuDevicePrimaryCtxRetain *cuDevicePrimaryCtxRetain;
    tcuDevicePrimaryCtxRelease *cuDevicePrimaryCtxRelease;
    tcuCtxPushCurrent_v2 *cuCtxPushCurrent;
    tcuCtxPopCurrent_v2 *cuCtxPopCurrent;
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
    tcuMemAlloc_v2 *cuMemAlloc;
    tcuMemFree_v2 *cuMemFree;
    tcuMemcpy2DAsync_v2 *cuMemcpy2DAsync;
    tcuMemcpyHtoD_v2 *cuMemcpyHtoD;
    tcuMemcpyDtoH_v2 *cuMemcpyDtoH;
    tcuStreamCreate *cuStreamCreate;
    tcuStreamSynchronize *cuStreamSynchronize;
    tcuStreamDestroy_v2 *cuStreamDestroy;
    tcuEventCreate *cuEventCreate;
    tcuEventRecord *cuEventRecord;
    tcuEventDestroy_v2 *cuEventDestroy;
    tcuModuleLoadData *cuModuleLoadData;
    tcuModuleUnload *cuModuleUnload;
    tcuModuleGetFunction *cuModuleGetFunction;
    tcuLaunchKernel *cuLaunchKernel;
    tcuGetErrorName *cuGetErrorName;
    CUresult (*cuIpcGetMemHandle)(wg_ipc_mem_handle *, CUdeviceptr);
    CUresult (*cuIpcGetEventHandle)(wg_ipc_event_handle *, CUevent);
    CUresult (*cuIpcOpenEventHandle)(CUevent *, wg_ipc_event_handle);
    tcuEventQuery *cuEventQuery;

    tcuvidGetDecoderCaps *cuvidGetDecoderCaps;
    tcuvidCreateDecoder *cuvidCreateDecoder;
    tcuvidDestroyDecoder *cuvidDestroyDecoder;
    tcuvidDecodePicture *cuvidDecodePicture;
    tcuvidMapVideoFrame64 *cuvidMapVideoFrame64;
    tcuvidUnmapVideoFrame64 *cuvidUnmapVideoFrame64;
    tcuvidCtxLockCreate *cuvidCtxLockCreate;
    tcuvidCtxLockDestroy *cuvidCtxLockDestroy;
    tcuvidCreateVideoParser *cuvidCreateVideoParser;
    tcuvidParseVideoData *cuvidParseVideoData;
    tcuvidDestroyVideoParser *cuvidDestroyVideoParser;

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction k_rgb;
    CUfunction k_vres, k_hres; /* the resize: conversion + vertical pass, horizontal pass */
    int driver_version;
    char name[128];
    unsigned char uuid[16];
    /* bytes of frame data copied device<->host (the NV12 test path only; must stay 0 on the RGB path) */
    long long frame_copy_bytes;
} wg_driver;

/* stages of wg_open's failure, so Go can say why GPU delivery is off */
enum { WG_OK = 0, WG_NO_LIBCUDA = 1, WG_CUDA_SYMBOL = 2, WG_CUINIT = 3, WG_NO_DEVICE = 4,
       WG_CONTEXT = 5, WG_NO_LIBNVCUVID = 6, WG_CUVID_SYMBOL = 7 };

int wg_open(wg_driver *d, const char *cuda_path, const char *cuvid_path, int device, char *err, size_t errlen);
void wg_close(wg_driver *d);
const char *wg_err_name(wg_driver *d, CUresult r);
int wg_push(wg_driver *d);
int wg_pop(wg_driver *d);

typedef struct {
    int supported, nvdecs, max_w, max_h, min_w, min_h, output_mask;
} wg_caps;
CUresult wg_decoder_caps(wg_driver *d, int codec, int bit_depth_minus8, wg_caps *out);
CUresult wg_load_kernel(wg_driver *d, const char *ptx, const char *name, const char *vres, const char *hres);

/* What to do with each kept frame. */
enum { WG_OUT_NV12_HOST = 0, WG_OUT_RGB_DEVICE = 1 };

typedef struct wg_session {
    wg_driver *d;
    int codec;
    CUvideoctxlock lock;
    CUvideodecoder dec;
    CUVIDDECODECREATEINFO ci;
    int have_dec;
    int decode_surfaces;
    CUvideoparser parser;
    CUstream stream;
    /* what the caller sized its outputs for: a stream of another display size or depth fails */
    int expect_w, expect_h, expect_bits;
    int bad_stream;              /* 1: the failure is the stream's (not the driver's) */
    /* the stream's format, from the sequence callback */
    int coded_w, coded_h, disp_left, disp_top, width, height, bit_depth;
    int color_primaries_matrix, full_range;
    /* one decode call: frames whose timestamp is in want[] are kept */
    const int64_t *want;
    int nwant;
    int mode;
    unsigned char *host_out;     /* NV12_HOST: nwant packed frames */
    size_t host_frame_bytes;
    CUdeviceptr dev_out;         /* RGB_DEVICE: nwant frames of width*height*3 elements */
    const unsigned long long *dev_outs; /* RGB_DEVICE, if set: frame i goes to dev_outs[i] instead */
    CUdeviceptr tables;          /* 5 int16 tables of 1<<bits entries */
    int table_n;
    /* RGB_DEVICE with out_w > 0: each frame (in_w x in_h) resized to out_w x out_h through the
     * filters (ResizeFilter.deviceBytes) and the session's float32 scratch [out_h][in_w][3] */
    int in_w, in_h, out_w, out_h;
    CUdeviceptr vfilter, hfilter;
    unsigned vtaps, htaps;
    /* RGB_DEVICE: the output elements, rgb.cu's out_kind (0 uint8, 1 float32, 2 float16, 3 bfloat16),
     * and for 1..3 the normalisation's mean[3] then std[3] (float32) */
    unsigned out_kind;
    float norm[6];
    CUdeviceptr scratch;
    size_t scratch_bytes;
    /* RGB_DEVICE: an event (a client's release event, opened with cuIpcOpenEventHandle) that must
     * have completed before the call's first write to a destination; 0: none. launch_rgb hands it to
     * Go (wgAwaitRelease, with wait_handle: the Go side's cgo.Handle), which polls cuEventQuery
     * honouring the decode's ctx and Options.ReleaseWait. Cleared once it completed. */
    unsigned long long wait_event, wait_handle;
    int wait_failed;             /* 1: the wait did not end with the event complete (Go has the error) */
    long long n_waits;
    int *kept;                   /* per want: 1 once written */
    /* counters over the session's life */
    long long n_decoded, n_displayed, n_kept, n_decoders_created, n_parsers;
    CUresult err;
    char errmsg[256];
} wg_session;

int wg_session_init(wg_session *s, wg_driver *d, int codec);
/* grows s's resize scratch to at least need bytes (its budget is leased by Go first) */
int wg_session_reserve_scratch(wg_session *s, size_t need);
void wg_session_free(wg_session *s);
/* Feed one segment: first the sequence header seqhdr (AV1's configOBUs; NULL for H.264/HEVC) as a
 * packet of its own and as the parser's CUVIDEOFORMATEX, then the access units data[off[i]:off[i+1]]
 * (Annex-B for H.264/HEVC, AV1 temporal units of sized OBUs) with timestamps ts[i], then end of
 * stream. Returns 0 or a CUresult (s->errmsg says which call; s->bad_stream when the stream is not
 * what the configuration says). */
int wg_session_decode(wg_session *s, const unsigned char *seqhdr, size_t seqhdr_len, const unsigned char *data,
                      const size_t *off, const int64_t *ts, int n);


int wg_alloc(wg_driver *d, size_t n, unsigned long long *out);
int wg_free(wg_driver *d, unsigned long long p);
int wg_htod(wg_driver *d, unsigned long long dst, const void *src, size_t n);
int wg_dtoh(wg_driver *d, void *dst, unsigned long long src, size_t n);
int wg_mem_info(wg_driver *d, size_t *free_b, size_t *total_b);
long long wg_frame_copy_bytes(wg_driver *d);

int wg_event_create(wg_driver *d, unsigned long long *ev, void *handle64);
int wg_event_record(wg_driver *d, unsigned long long ev);
int wg_event_destroy(wg_driver *d, unsigned long long ev);
int wg_ipc_mem(wg_driver *d, unsigned long long p, void *handle64);
/* cuEventQuery: 0 (complete), 600 (CUDA_ERROR_NOT_READY) or another CUresult */
int wg_event_query(wg_driver *d, unsigned long long ev);
/* opens another process's interprocess event by its 64-byte handle (destroy it with wg_event_destroy) */
int wg_ipc_open_event(wg_driver *d, const void *handle64, unsigned long long *ev);
#endif
