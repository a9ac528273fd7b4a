// Gemm and MatMul: Y[t,i,j] = act(alpha * sum_k A[t,i,k] B[t,k,j] + beta * C[i,j])
// over up to two batch dims t = (t0, t1). Every operand is addressed by
// strides, so transposes, broadcast batch dims (stride 0) and C as a scalar,
// row, column or matrix need no copies.
#version 450

// Storage: float32, or float16 when compiled with -DREEL_F16 (the _f16
// kernels); values are widened to float32 for the arithmetic.
#ifdef REEL_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define stored float16_t
#else
#define stored float
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer A { stored a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { stored b[]; };
layout(std430, set = 0, binding = 2) readonly buffer C { stored c[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { stored y[]; };

// models/vulkan/ops_nn.c: gemm_push.
layout(push_constant) uniform Push {
    int m, n, k;
    int sam, sak;         // A's strides along M and K
    int sbk, sbn;         // B's strides along K and N
    int scm, scn;         // C's strides along M and N (0: broadcast)
    int nb1;              // size of the second batch dim
    int sa0, sa1, sb0, sb1; // batch strides (0: broadcast)
    int flags;            // 1: C
    int act;              // VK_ACT_*
    float alpha, beta, fa, fb;
    int total;            // output elements
} pc;

// models/cpu/blas.c nn_activate.
float activate(float v)
{
    switch (pc.act) {
    case 1: return v > 0.0 ? v : 0.0;
    case 2: return v < pc.fa ? pc.fa : v > pc.fb ? pc.fb : v;
    case 3: return 1.0 / (1.0 + exp(-v));
    case 4: return v / (1.0 + exp(-v));
    case 5: { float t = pc.fa * v + pc.fb; return t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t; }
    case 6: {
        float al = pc.fa, be = pc.fb;
        if (al == 0.0 && be == 0.0) { al = 1.0 / 6.0; be = 0.5; }
        float t = al * v + be;
        return v * (t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t);
    }
    }
    return v;
}

// Each workgroup computes an 8x8 tile of one batch's output, staging 8x8
// tiles of A and B in shared memory (a read of each input serves 8 outputs).
// The workgroup size must be 64 (the kernel's default; ops_nn.c checks);
// workgroup w (x, then rows in y) is tile w.
#define T 8
shared float ta[T][T + 1];
shared float tb[T][T + 1];

void main()
{
    int tm = (pc.m + T - 1) / T, tn = (pc.n + T - 1) / T;
    int tiles = pc.total / (pc.m * pc.n) * tm * tn;
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (wg >= uint(tiles)) // the whole workgroup: barriers below stay uniform
        return;
    int w = int(wg), tj = w % tn, t = w / tn;
    int ti = t % tm;
    t /= tm;
    int t0 = t / pc.nb1, t1 = t % pc.nb1;
    int ly = int(gl_LocalInvocationID.x) / T, lx = int(gl_LocalInvocationID.x) % T;
    int i = ti * T + ly, j = tj * T + lx;
    int abase = t0 * pc.sa0 + t1 * pc.sa1 + i * pc.sam, bbase = t0 * pc.sb0 + t1 * pc.sb1 + (tj * T + lx) * pc.sbn;
    bool arow = i < pc.m, bcol = tj * T + lx < pc.n;
    float acc = 0.0;
    for (int k0 = 0; k0 < pc.k; k0 += T) {
        // This invocation loads A[i, k0 + lx] and B[k0 + ly, j].
        int ak = k0 + lx, bk = k0 + ly;
        ta[ly][lx] = arow && ak < pc.k ? float(a[abase + ak * pc.sak]) : 0.0;
        tb[ly][lx] = bcol && bk < pc.k ? float(b[bbase + bk * pc.sbk]) : 0.0;
        barrier();
        int kn = min(T, pc.k - k0);
        for (int kk = 0; kk < kn; kk++)
            acc += ta[ly][kk] * tb[kk][lx];
        barrier();
    }
    if (!arow || j >= pc.n)
        return;
    float v = pc.alpha * acc;
    if ((pc.flags & 1) != 0)
        v += pc.beta * float(c[i * pc.scm + j * pc.scn]);
    y[(t * pc.m + i) * pc.n + j] = stored(activate(v));
}
