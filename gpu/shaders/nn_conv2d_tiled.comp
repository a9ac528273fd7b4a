// Conv as an implicit GEMM, for convs with enough output channels and
// products per output for tiles to pay (models/vulkan/ops_nn.c conv_run
// chooses; depthwise and small convs run nn_conv2d.comp). The same
// semantics and push constants as nn_conv2d.comp:
// Y[n,m,oh,ow] = act(sum over the group's channels and the window of X*W
// + B[m] + R[n,m,oh,ow]).
//
// Per group g: Y_g[Mg, P] = W_g[Mg, K] * X_g[K, P], K = cg*kh*kw products
// per output, P = N*OH*OW output pixels, X_g's columns gathered from X on
// the fly (im2col without the copy). A workgroup computes one TM x TN tile
// of Y_g: per TK-wide slice of K it stages the slices of W_g and X_g in
// shared memory (each value loaded once serves TN or TM outputs), and each
// invocation accumulates an RM x RN tile in registers. The next slice is
// read from memory into registers while the current one is multiplied.
// Bias, residual and activation are applied to the registers before the
// store. Any shape is covered: tile parts past Mg or P and slice parts past
// K are zero-filled, and stores beyond them skipped.
#version 450

// Storage: float32, or float16 when compiled with -DREEL_F16 (the _f16
// kernels); values are widened to float32 for the arithmetic.
#ifdef REEL_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define stored float16_t
#else
#define stored float
#endif

// The workgroup size must be (TM / RM) * (TN / RN) (ops_nn.c sets it).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int TM = 64; // output channels per tile, a multiple of RM
layout(constant_id = 2) const int TN = 64; // output pixels per tile, a multiple of RN
layout(constant_id = 3) const int TK = 16; // products per slice
layout(constant_id = 4) const int RM = 4;  // per invocation: channels
layout(constant_id = 5) const int RN = 4;  // per invocation: pixels

const int SM = TM / RM, SN = TN / RN, THREADS = SM * SN;
// Loads per invocation per slice, of W and of X.
const int LA = (TM * TK + THREADS - 1) / THREADS, LB = (TK * TN + THREADS - 1) / THREADS;

layout(std430, set = 0, binding = 0) readonly buffer X { stored x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Wt { stored wt[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { stored bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer R { stored res[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { stored y[]; };

// models/vulkan/ops_nn.c: conv_push.
layout(push_constant) uniform Push {
    int c, h, w;          // input channels and plane
    int m, oh, ow;        // output channels and plane
    int cg, mg;           // channels per group, in and out
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int flags;            // 1: bias, 2: residual
    int act;              // VK_ACT_*
    float fa, fb;
    int total;            // output elements
} pc;

// W's slice as [k][m] (a row of TM + 1: the transposing stores of
// consecutive k fall in different banks), X's as [k][p].
shared float sa[TK * (TM + 1)];
shared float sb[TK * TN];

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
        float a = pc.fa, b = pc.fb;
        if (a == 0.0 && b == 0.0) { a = 1.0 / 6.0; b = 0.5; }
        float t = a * v + b;
        return v * (t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t);
    }
    }
    return v;
}

// This invocation's part of each slice's loads: elements t + l * THREADS.
// Of W: k = k0 + ak[l] of the row at arow[l] (-1: past Mg, zero), into
// sa[adst[l]] (-1: past the slice, no store). Of X: k = k0 + bk[l] (-1:
// past the slice) for the pixel whose window starts at (biy, bix) of image
// plane bbase (-1: past P), into sb[t + l * THREADS].
int ak[LA], arow[LA], adst[LA];
int bk[LB], bbase[LB], biy[LB], bix[LB];
float ra[LA], rb[LB]; // the slice read ahead

void plan_loads(int t, int g, int m0, int p0, int K, int P)
{
    int ohw = pc.oh * pc.ow;
    for (int l = 0; l < LA; l++) {
        int e = t + l * THREADS, kk = e % TK, mm = e / TK;
        ak[l] = kk;
        adst[l] = e < TM * TK ? kk * (TM + 1) + mm : -1;
        arow[l] = e < TM * TK && m0 + mm < pc.mg ? (g * pc.mg + m0 + mm) * K : -1;
    }
    for (int l = 0; l < LB; l++) {
        int e = t + l * THREADS, p = p0 + e % TN;
        int n = p / ohw, pix = p - n * ohw, oy = pix / pc.ow, ox = pix - oy * pc.ow;
        bk[l] = e < TK * TN ? e / TN : -1;
        bbase[l] = p < P ? (n * pc.c + g * pc.cg) * pc.h * pc.w : -1;
        biy[l] = oy * pc.sh - pc.ph;
        bix[l] = ox * pc.sw - pc.pw;
    }
}

// Reads the slice at k0 into ra and rb: zero past K, Mg, P and the pads.
void read_slice(int k0, int K)
{
    int khw = pc.kh * pc.kw;
    for (int l = 0; l < LA; l++)
        ra[l] = arow[l] >= 0 && k0 + ak[l] < K ? float(wt[arow[l] + k0 + ak[l]]) : 0.0;
    for (int l = 0; l < LB; l++) {
        int k = k0 + bk[l];
        float v = 0.0;
        if (bbase[l] >= 0 && bk[l] >= 0 && k < K) {
            int ci = k / khw, r = k - ci * khw, a = r / pc.kw;
            int iy = biy[l] + a * pc.dh, ix = bix[l] + (r - a * pc.kw) * pc.dw;
            if (iy >= 0 && iy < pc.h && ix >= 0 && ix < pc.w)
                v = float(x[bbase[l] + (ci * pc.h + iy) * pc.w + ix]);
        }
        rb[l] = v;
    }
}

void main()
{
    int K = pc.cg * pc.kh * pc.kw, ohw = pc.oh * pc.ow;
    int P = pc.total / pc.m; // N * OH * OW
    int tiles_m = (pc.mg + TM - 1) / TM, tiles_n = (P + TN - 1) / TN;
    uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (wg >= uint(pc.m / pc.mg * tiles_m * tiles_n)) // the whole workgroup: barriers below stay uniform
        return;
    // Pixel tiles vary fastest: neighbouring workgroups share W's rows.
    int tile = int(wg), tn = tile % tiles_n;
    tile /= tiles_n;
    int m0 = tile % tiles_m * TM, g = tile / tiles_m, p0 = tn * TN;
    int t = int(gl_LocalInvocationID.x), tx = t % SN, ty = t / SN;

    plan_loads(t, g, m0, p0, K, P);
    float acc[RM * RN];
    for (int i = 0; i < RM * RN; i++)
        acc[i] = 0.0;
    read_slice(0, K);
    for (int k0 = 0; k0 < K; k0 += TK) {
        barrier(); // every invocation is done with the last slice
        for (int l = 0; l < LA; l++)
            if (adst[l] >= 0)
                sa[adst[l]] = ra[l];
        for (int l = 0; l < LB; l++)
            if (bk[l] >= 0)
                sb[t + l * THREADS] = rb[l];
        barrier();
        if (k0 + TK < K)
            read_slice(k0 + TK, K);
        // Rows ty + i * SM, columns tx + j * SN: a warp's shared reads and
        // global stores fall on consecutive addresses.
        for (int kk = 0; kk < TK; kk++) {
            float a[RM], b[RN];
            for (int i = 0; i < RM; i++)
                a[i] = sa[kk * (TM + 1) + ty + i * SM];
            for (int j = 0; j < RN; j++)
                b[j] = sb[kk * TN + tx + j * SN];
            for (int i = 0; i < RM; i++)
                for (int j = 0; j < RN; j++)
                    acc[i * RN + j] += a[i] * b[j];
        }
    }

    for (int j = 0; j < RN; j++) {
        int p = p0 + tx + j * SN;
        if (p >= P)
            continue;
        int n = p / ohw, pix = p - n * ohw;
        for (int i = 0; i < RM; i++) {
            int m = m0 + ty + i * SM;
            if (m >= pc.mg)
                continue;
            int mo = g * pc.mg + m, o = (n * pc.m + mo) * ohw + pix;
            float v = acc[i * RN + j];
            if ((pc.flags & 1) != 0)
                v += float(bias[mo]);
            if ((pc.flags & 2) != 0)
                v += float(res[o]);
            y[o] = stored(activate(v));
        }
    }
}
