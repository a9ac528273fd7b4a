// Winograd F(2x2, 3x3) convolution (see winograd.h).
//
// With g the 3x3 filter, d a 4x4 input block and
//   G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1],
// the 2x2 outputs are A^T [(G g G^T) .* (B^T d B)] A summed over channels.
// The sum over channels of each of the 16 products is a GEMM:
//   Y[e] (M x T) = U[e] (M x C) * V[e] (C x T),  e = 0..15,
// U the transformed weights (made once when the weights are constants of
// the model, conv.c), V the transformed input blocks, one column per tile.
// Transforms run along a row of tiles, so they vectorize.
#include "models/cpu/winograd.h"

#include <stdlib.h>

#include "models/cpu/microgemm.h"

#define TARGETS __attribute__((target_clones("avx512f", "avx2,fma", "default")))

bool nn_wino_plan_init(int64_t C, int64_t M, const nn_window *w, nn_wino_plan *p)
{
    const char *env = getenv("REEL_CONV_WINOGRAD");
    if (env && strcmp(env, "0") == 0)
        return false;
    if (w->in[0] != 1 || w->k[0] != 1 || w->k[1] != 3 || w->k[2] != 3 || w->s[1] != 1 || w->s[2] != 1 ||
        w->d[1] != 1 || w->d[2] != 1)
        return false;
    for (int i = 1; i < 3; i++)
        if (w->pb[i] > 2 || w->pe[i] > 2)
            return false;
    *p = (nn_wino_plan){ .C = C, .M = M, .H = w->in[1], .W = w->in[2], .OH = w->out[1], .OW = w->out[2],
                         .pt = w->pb[1], .pl = w->pb[2] };
    p->TH = (p->OH + 1) / 2;
    p->TW = (p->OW + 1) / 2;
    p->T = p->TH * p->TW;
    // Small images (7x7 and below) have too few tiles to amortize the
    // weights' transform, which is 16/9 the size of the weights.
    return p->T >= 36 && C >= 8 && M >= 8 && C * p->T <= INT32_MAX && M * p->T <= INT32_MAX;
}

size_t nn_wino_weights_floats(const nn_wino_plan *p)
{
    return (size_t)(16 * p->M * p->C);
}

size_t nn_wino_scratch(const nn_wino_plan *p)
{
    return (size_t)(16 * (p->C * p->T + p->M * p->T));
}

typedef struct wino_job {
    const nn_wino_plan *p;
    const float *x, *wt, *U;
    float *y, *Uout, *V, *Y;
    int64_t per_task; // channels per task (weights, input, output)
    nn_wino_epilogue epilogue;
    void *arg;
} wino_job;

// ---- Weights: U[e][m][c] = (G g G^T)[e].

static void weights_task(void *arg, int task, int worker)
{
    (void)worker;
    const wino_job *j = arg;
    const nn_wino_plan *p = j->p;
    int64_t me = p->M * p->C;
    for (int64_t m = task * j->per_task; m < MIN(p->M, (task + 1) * j->per_task); m++)
        for (int64_t c = 0; c < p->C; c++) {
            const float *g = j->wt + (m * p->C + c) * 9;
            float t[4][3]; // G g
            for (int k = 0; k < 3; k++) {
                t[0][k] = g[k];
                t[1][k] = 0.5f * (g[k] + g[3 + k] + g[6 + k]);
                t[2][k] = 0.5f * (g[k] - g[3 + k] + g[6 + k]);
                t[3][k] = g[6 + k];
            }
            float *u = j->Uout + m * p->C + c;
            for (int i = 0; i < 4; i++) {
                u[(4 * i) * me] = t[i][0];
                u[(4 * i + 1) * me] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
                u[(4 * i + 2) * me] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
                u[(4 * i + 3) * me] = t[i][2];
            }
        }
}

// ---- Input: V[e][c][tile] = (B^T d B)[e].

// d B along one row of the padded plane: h[k * n + tx], k < 4, for the
// tiles tx < n (each reads r[2 tx .. 2 tx + 3]).
TARGETS static void input_cols(const float *restrict r, float *restrict h, int64_t n)
{
    for (int64_t tx = 0; tx < n; tx++) {
        float a = r[2 * tx], b = r[2 * tx + 1], c = r[2 * tx + 2], d = r[2 * tx + 3];
        h[tx] = a - c;
        h[n + tx] = b + c;
        h[2 * n + tx] = c - b;
        h[3 * n + tx] = b - d;
    }
}

// B^T (d B) for one row of tiles from the column transforms of its four
// plane rows h0..h3: v[e * stride + tx].
TARGETS static void input_rows(const float *h0, const float *h1, const float *h2, const float *h3,
                               float *restrict v, int64_t stride, int64_t n)
{
    for (int k = 0; k < 4; k++)
        for (int64_t tx = 0; tx < n; tx++) {
            float a = h0[k * n + tx], b = h1[k * n + tx], c = h2[k * n + tx], d = h3[k * n + tx];
            v[k * stride + tx] = a - c;
            v[(4 + k) * stride + tx] = b + c;
            v[(8 + k) * stride + tx] = c - b;
            v[(12 + k) * stride + tx] = b - d;
        }
}

static void input_task(void *arg, int task, int worker)
{
    (void)worker;
    const wino_job *j = arg;
    const nn_wino_plan *p = j->p;
    // The channel between zero pads, as many rows and columns as the tiles
    // read: 2 TH + 2 by 2 TW + 2; then each plane row's column transforms.
    int64_t PH = 2 * p->TH + 2, PW = 2 * p->TW + 2;
    float *plane = g_new0(float, PH * PW), *h = g_new(float, PH * 4 * p->TW);
    int64_t rows = MIN(p->H, PH - p->pt), cols = MIN(p->W, PW - p->pl);
    for (int64_t c = task * j->per_task; c < MIN(p->C, (task + 1) * j->per_task); c++) {
        const float *x = j->x + c * p->H * p->W;
        for (int64_t r = 0; r < rows; r++)
            memcpy(plane + (r + p->pt) * PW + p->pl, x + r * p->W, (size_t)cols * sizeof *x);
        for (int64_t r = 0; r < PH; r++)
            input_cols(plane + r * PW, h + r * 4 * p->TW, p->TW);
        for (int64_t ty = 0; ty < p->TH; ty++) {
            const float *h0 = h + 2 * ty * 4 * p->TW;
            input_rows(h0, h0 + 4 * p->TW, h0 + 8 * p->TW, h0 + 12 * p->TW, j->V + c * p->T + ty * p->TW,
                       p->C * p->T, p->TW);
        }
    }
    g_free(plane);
    g_free(h);
}

// ---- Products: Y[e] = U[e] V[e].

static void gemm_task(void *arg, int e, int worker)
{
    (void)worker;
    const wino_job *j = arg;
    const nn_wino_plan *p = j->p;
    nn_gemm_epi((int)p->M, (int)p->T, (int)p->C, j->U + e * p->M * p->C, (int)p->C, j->V + e * p->C * p->T,
                (int)p->T, j->Y + e * p->M * p->T, (int)p->T, NULL);
}

// ---- Output: the 2x2 block A^T Y A of each tile.

// One row of tiles: y[e * stride + tx] for tx < n, the two output rows
// (2 n wide) to o0 and o1.
TARGETS static void output_row(const float *y, int64_t stride, int64_t n, float *restrict o0, float *restrict o1)
{
    for (int64_t tx = 0; tx < n; tx++) {
        float m[4][4], s[4][2];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++)
                m[i][k] = y[(4 * i + k) * stride + tx];
        for (int i = 0; i < 4; i++) { // M A
            s[i][0] = m[i][0] + m[i][1] + m[i][2];
            s[i][1] = m[i][1] - m[i][2] - m[i][3];
        }
        for (int k = 0; k < 2; k++) { // A^T (M A)
            o0[2 * tx + k] = s[0][k] + s[1][k] + s[2][k];
            o1[2 * tx + k] = s[1][k] - s[2][k] - s[3][k];
        }
    }
}

static void output_task(void *arg, int task, int worker)
{
    (void)worker;
    const wino_job *j = arg;
    const nn_wino_plan *p = j->p;
    float *rows = g_new(float, 4 * p->TW);
    for (int64_t m = task * j->per_task; m < MIN(p->M, (task + 1) * j->per_task); m++) {
        float *ym = j->y + m * p->OH * p->OW;
        for (int64_t ty = 0; ty < p->TH; ty++) {
            output_row(j->Y + m * p->T + ty * p->TW, p->M * p->T, p->TW, rows, rows + 2 * p->TW);
            for (int a = 0; a < 2 && 2 * ty + a < p->OH; a++) {
                float *row = ym + (2 * ty + a) * p->OW;
                memcpy(row, rows + a * 2 * p->TW, (size_t)p->OW * sizeof *row);
                j->epilogue(j->arg, m, row, 2 * ty + a, p->OW);
            }
        }
    }
    g_free(rows);
}

void nn_wino_weights(const nn_wino_plan *p, const float *wt, float *U, const reel_exec_ctx *ctx)
{
    wino_job j = { .p = p, .wt = wt, .Uout = U };
    int threads = ctx->workers ? ctx->threads : 1;
    j.per_task = MAX(1, p->M / (4 * threads));
    nn_parallel(ctx, (int)((p->M + j.per_task - 1) / j.per_task), weights_task, &j);
}

void nn_wino_run(const nn_wino_plan *p, const float *x, const float *U, float *y, float *scratch,
                 const reel_exec_ctx *ctx, nn_wino_epilogue epilogue, void *arg)
{
    wino_job j = { .p = p, .x = x, .U = U, .y = y, .V = scratch, .epilogue = epilogue, .arg = arg };
    j.Y = j.V + 16 * p->C * p->T;
    // About 4 tasks per thread for the per-channel stages.
    int threads = ctx->workers ? ctx->threads : 1;
    j.per_task = MAX(1, p->C / (4 * threads));
    nn_parallel(ctx, (int)((p->C + j.per_task - 1) / j.per_task), input_task, &j);
    nn_parallel(ctx, 16, gemm_task, &j);
    j.per_task = MAX(1, p->M / (4 * threads));
    nn_parallel(ctx, (int)((p->M + j.per_task - 1) / j.per_task), output_task, &j);
}
