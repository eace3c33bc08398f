// ops.cu: the non-matmul steps of the forward pass on the GPU
// (cuda_backend.h): RMSNorm, RoPE, SwiGLU, axpy, the f16 KV cache store,
// causal attention over the cache, and the MoE router's top-k. Each follows
// the CPU backend's scalar reference (runtime/model/backend_cpu*.c) (sums in double where it uses double).
#include "runtime/device/cuda/scuda_impl.cuh"

#include <float.h>

// ------------------------------------------------------------------ RMSNorm

__global__ void scuda_rmsnorm_kernel(const float *x, const float *w, float *out, int n, float eps)
{
    __shared__ double part[256];
    const float *row = x + (size_t)blockIdx.x * n;
    float *o = out + (size_t)blockIdx.x * n;
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)__fmul_rn(row[i], row[i]);
    part[threadIdx.x] = ss;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    const float scale = 1.0f / sqrtf(__fadd_rn((float)(part[0] / n), eps));
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = __fmul_rn(__fmul_rn(row[i], scale), w[i]);
}

extern "C" int scuda_rmsnorm(scuda_ctx *c, const float *x, const float *w, float *out, int rows, int n, float eps,
                             char *err, size_t errlen)
{
    if (rows <= 0) return 0;
    scuda_rmsnorm_kernel<<<rows, 256, 0, c->stream>>>(x, w, out, n, eps);
    SCUDA_LAUNCHED("scuda_rmsnorm_kernel");
    return 0;
}

// ------------------------------------------------------------------ RoPE

__global__ void scuda_rope_kernel(float *v, int n_heads, int head_dim, int n_rot, int pos0, float base, int neox)
{
    const int t = blockIdx.x, h = blockIdx.y, half = n_rot / 2;
    float *hv = v + ((size_t)t * n_heads + h) * head_dim;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        const double theta = (double)(pos0 + t) * pow((double)base, -2.0 * i / n_rot);
        const float cs = (float)cos(theta), sn = (float)sin(theta);
        const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float a = hv[i0], b = hv[i1];
        hv[i0] = __fsub_rn(__fmul_rn(a, cs), __fmul_rn(b, sn));
        hv[i1] = __fadd_rn(__fmul_rn(a, sn), __fmul_rn(b, cs));
    }
}

extern "C" int scuda_rope(scuda_ctx *c, float *v, int n_tok, int n_heads, int head_dim, int n_rot, int pos0,
                          float base, int neox, char *err, size_t errlen)
{
    if (n_tok <= 0 || n_heads <= 0) return 0;
    if (n_rot > head_dim || n_rot % 2) {
        snprintf(err, errlen, "CUDA rope: n_rot %d with head_dim %d", n_rot, head_dim);
        return -1;
    }
    scuda_rope_kernel<<<dim3(n_tok, n_heads), 64, 0, c->stream>>>(v, n_heads, head_dim, n_rot, pos0, base, neox);
    SCUDA_LAUNCHED("scuda_rope_kernel");
    return 0;
}

// ------------------------------------------------------------------ elementwise

__global__ void scuda_swiglu_kernel(const float *g, const float *u, float *out, int64_t n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float x = g[i];
        out[i] = __fmul_rn(x / (1.0f + expf(-x)), u[i]);
    }
}

extern "C" int scuda_swiglu(scuda_ctx *c, const float *gate, const float *up, float *out, int64_t n, char *err,
                            size_t errlen)
{
    if (n <= 0) return 0;
    scuda_swiglu_kernel<<<scuda_blocks(n, 256), 256, 0, c->stream>>>(gate, up, out, n);
    SCUDA_LAUNCHED("scuda_swiglu_kernel");
    return 0;
}

__global__ void scuda_axpy_kernel(float a, const float *x, float *y, int64_t n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(y[i], __fmul_rn(a, x[i]));
}

extern "C" int scuda_axpy(scuda_ctx *c, float a, const float *x, float *y, int64_t n, char *err, size_t errlen)
{
    if (n <= 0) return 0;
    scuda_axpy_kernel<<<scuda_blocks(n, 256), 256, 0, c->stream>>>(a, x, y, n);
    SCUDA_LAUNCHED("scuda_axpy_kernel");
    return 0;
}

// ------------------------------------------------------------------ KV cache + attention

// The cache's element: f16 (rounded to nearest even, as the CPU's
// kernels' f32->f16) or f32 (--kv-type f32: nothing rounded).
__device__ __forceinline__ void kv_put(__half *p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void kv_put(float *p, float x) { *p = x; }
__device__ __forceinline__ float kv_get(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ float kv_get(const float *p) { return *p; }

template <typename T>
__global__ void scuda_kv_store_kernel(const float *k, const float *v, T *kc, T *vc, int64_t n, int64_t off)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        kv_put(kc + off + i, k[i]);
        kv_put(vc + off + i, v[i]);
    }
}

extern "C" int scuda_kv_store(scuda_ctx *c, const float *k, const float *v, void *kcache, void *vcache, int f32,
                              int n_tok, int kv_dim, int pos0, char *err, size_t errlen)
{
    const int64_t n = (int64_t)n_tok * kv_dim, off = (int64_t)pos0 * kv_dim;
    if (n <= 0) return 0;
    if (f32)
        scuda_kv_store_kernel<<<scuda_blocks(n, 256), 256, 0, c->stream>>>(k, v, (float *)kcache, (float *)vcache, n,
                                                                            off);
    else
        scuda_kv_store_kernel<<<scuda_blocks(n, 256), 256, 0, c->stream>>>(k, v, (__half *)kcache, (__half *)vcache,
                                                                            n, off);
    SCUDA_LAUNCHED("scuda_kv_store_kernel");
    return 0;
}

#define ATT_MAX_PER_LANE 8   // head_dim <= 256

// One warp per (token, query head): lanes hold head_dim/32 output dims each;
// keys are visited in order with an online softmax (running max, running sum
// in double), so no score buffer of n_ctx floats is needed.
template <typename T>
__global__ void scuda_attention_kernel(const float *q, const T *kc, const T *vc, float *out, int n_head, int n_head_kv,
                                       int head_dim, int pos0)
{
    const int t = blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
    const int kvh = h / (n_head / n_head_kv), kv_dim = n_head_kv * head_dim, per = (head_dim + 31) / 32;
    const float *qh = q + ((size_t)t * n_head + h) * head_dim;
    float qv[ATT_MAX_PER_LANE], acc[ATT_MAX_PER_LANE];
    for (int j = 0; j < per; j++) {
        const int d = lane + 32 * j;
        qv[j] = d < head_dim ? qh[d] : 0.0f;
        acc[j] = 0.0f;
    }
    const float scale = 1.0f / sqrtf((float)head_dim);
    float mx = -FLT_MAX;
    double sum = 0.0;
    const int n_pos = pos0 + t + 1;
    for (int p = 0; p < n_pos; p++) {
        const T *kr = kc + (size_t)p * kv_dim + (size_t)kvh * head_dim;
        float s = 0.0f;
        for (int j = 0; j < per; j++) {
            const int d = lane + 32 * j;
            if (d < head_dim) s = fmaf(kv_get(kr + d), qv[j], s);
        }
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        s *= scale;
        const float nmx = s > mx ? s : mx;
        const float corr = expf(mx - nmx), e = expf(s - nmx);
        sum = sum * corr + e;
        const T *vr = vc + (size_t)p * kv_dim + (size_t)kvh * head_dim;
        for (int j = 0; j < per; j++) {
            const int d = lane + 32 * j;
            if (d < head_dim) acc[j] = acc[j] * corr + e * kv_get(vr + d);
        }
        mx = nmx;
    }
    const float inv = (float)(1.0 / sum);
    float *oh = out + ((size_t)t * n_head + h) * head_dim;
    for (int j = 0; j < per; j++) {
        const int d = lane + 32 * j;
        if (d < head_dim) oh[d] = acc[j] * inv;
    }
}

extern "C" int scuda_attention(scuda_ctx *c, const float *q, const void *kcache, const void *vcache, int f32,
                               float *out, int n_tok, int n_head, int n_head_kv, int head_dim, int pos0, char *err,
                               size_t errlen)
{
    if (n_tok <= 0) return 0;
    if (head_dim > 32 * ATT_MAX_PER_LANE || n_head_kv <= 0 || n_head % n_head_kv) {
        snprintf(err, errlen, "CUDA attention: head_dim %d (max %d), %d heads over %d kv heads", head_dim,
                 32 * ATT_MAX_PER_LANE, n_head, n_head_kv);
        return -1;
    }
    const dim3 grid(n_tok, n_head);
    if (f32)
        scuda_attention_kernel<<<grid, 32, 0, c->stream>>>(q, (const float *)kcache, (const float *)vcache, out, n_head,
                                                           n_head_kv, head_dim, pos0);
    else
        scuda_attention_kernel<<<grid, 32, 0, c->stream>>>(q, (const __half *)kcache, (const __half *)vcache, out,
                                                           n_head, n_head_kv, head_dim, pos0);
    SCUDA_LAUNCHED("scuda_attention_kernel");
    return 0;
}

// ------------------------------------------------------------------ router

// One thread per token: n_expert <= 256 and k small, as the CPU backend's router (backend_cpu_moe.c).
__global__ void scuda_router_topk_kernel(const float *logits, int n_tok, int n_expert, int k, int renorm,
                                         int32_t *sel, float *wts)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_tok) return;
    const float *lg = logits + (size_t)t * n_expert;
    float mx = -FLT_MAX;
    for (int e = 0; e < n_expert; e++) mx = lg[e] > mx ? lg[e] : mx;
    double sum = 0.0;
    for (int e = 0; e < n_expert; e++) sum += expf(lg[e] - mx);
    int32_t *s = sel + (size_t)t * k;
    float *w = wts + (size_t)t * k;
    for (int j = 0; j < k; j++) {
        int best = -1;
        float bp = 0.0f;
        for (int e = 0; e < n_expert; e++) {
            bool taken = false;
            for (int i = 0; i < j; i++) taken |= s[i] == e;
            const float p = (float)(expf(lg[e] - mx) / sum);
            if (!taken && (best < 0 || p > bp)) { best = e; bp = p; }
        }
        s[j] = best;
        w[j] = bp;
    }
    if (renorm) {
        float ws = 0.0f;
        for (int j = 0; j < k; j++) ws += w[j];
        if (ws < 6.103515625e-5f) ws = 6.103515625e-5f;
        for (int j = 0; j < k; j++) w[j] /= ws;
    }
}

extern "C" int scuda_router_topk(scuda_ctx *c, const float *logits, int n_tok, int n_expert, int k, int renorm,
                                 int32_t *sel, float *wts, char *err, size_t errlen)
{
    if (n_tok <= 0) return 0;
    if (n_expert < 1 || n_expert > 256 || k < 1 || k > n_expert) {
        snprintf(err, errlen, "CUDA router: top-%d of %d experts", k, n_expert);
        return -1;
    }
    scuda_router_topk_kernel<<<scuda_blocks(n_tok, 64), 64, 0, c->stream>>>(logits, n_tok, n_expert, k, renorm, sel,
                                                                           wts);
    SCUDA_LAUNCHED("scuda_router_topk_kernel");
    return 0;
}
