// Cutting text regions upright out of host frames (see ocr_crop.h).
#include "elements/ocr_crop.h"

#include <math.h>
#include <string.h>

static int clampi(int v, int hi)
{
    return v < 0 ? 0 : v > hi ? hi : v;
}

// Pixel (x, y), clamped to the frame, as B, G, R in 0..255 (BT.601).
static void pixel(const reel_ocr_frame *f, int x, int y, float bgr[3])
{
    x = clampi(x, f->w - 1);
    y = clampi(y, f->h - 1);
    const reel_buffer *b = f->b;
    const uint8_t *p;
    float r, g, bl;
    switch (f->fmt) {
    case REEL_PIXFMT_RGB24:
    case REEL_PIXFMT_BGR24:
    case REEL_PIXFMT_RGBA:
    case REEL_PIXFMT_BGRA: {
        int bpp = f->fmt == REEL_PIXFMT_RGB24 || f->fmt == REEL_PIXFMT_BGR24 ? 3 : 4;
        bool rgb = f->fmt == REEL_PIXFMT_RGB24 || f->fmt == REEL_PIXFMT_RGBA;
        p = b->planes[0] + (size_t)y * (size_t)b->strides[0] + (size_t)x * (size_t)bpp;
        r = p[rgb ? 0 : 2];
        g = p[1];
        bl = p[rgb ? 2 : 0];
        break;
    }
    case REEL_PIXFMT_GRAY8:
        r = g = bl = b->planes[0][(size_t)y * (size_t)b->strides[0] + (size_t)x];
        break;
    default: { // yuv420p, yuvj420p, nv12
        float Y = b->planes[0][(size_t)y * (size_t)b->strides[0] + (size_t)x], U, V;
        size_t cy = (size_t)(y / 2) * (size_t)b->strides[1];
        if (f->fmt == REEL_PIXFMT_NV12) {
            U = b->planes[1][cy + (size_t)(x / 2) * 2];
            V = b->planes[1][cy + (size_t)(x / 2) * 2 + 1];
        } else {
            U = b->planes[1][cy + (size_t)(x / 2)];
            V = b->planes[2][(size_t)(y / 2) * (size_t)b->strides[2] + (size_t)(x / 2)];
        }
        U -= 128;
        V -= 128;
        if (f->fmt != REEL_PIXFMT_YUVJ420P) {
            Y = (Y - 16) * 1.164f;
            U *= 1.138f; // 255 / 224: chroma to full range
            V *= 1.138f;
        }
        r = Y + 1.402f * V;
        g = Y - 0.344f * U - 0.714f * V;
        bl = Y + 1.772f * U;
    }
    }
    bgr[0] = CLAMP(bl, 0, 255);
    bgr[1] = CLAMP(g, 0, 255);
    bgr[2] = CLAMP(r, 0, 255);
}

// Bilinear between the four pixels around (x, y), continuous coordinates.
static void sample(const reel_ocr_frame *f, float x, float y, float bgr[3])
{
    float fx = x - 0.5f, fy = y - 0.5f, x0 = floorf(fx), y0 = floorf(fy), ax = fx - x0, ay = fy - y0;
    float q[4][3];
    pixel(f, (int)x0, (int)y0, q[0]);
    pixel(f, (int)x0 + 1, (int)y0, q[1]);
    pixel(f, (int)x0, (int)y0 + 1, q[2]);
    pixel(f, (int)x0 + 1, (int)y0 + 1, q[3]);
    for (int c = 0; c < 3; c++)
        bgr[c] = (q[0][c] * (1 - ax) + q[1][c] * ax) * (1 - ay) + (q[2][c] * (1 - ax) + q[3][c] * ax) * ay;
}

static float dist(const float *p, const float *q)
{
    return hypotf(p[0] - q[0], p[1] - q[1]);
}

// The corners read from corner k on: a turn by k quarters, clockwise.
static void rotate_corners(float c[4][2], int k)
{
    float t[4][2];
    for (int i = 0; i < 4; i++)
        memcpy(t[i], c[(i + k) % 4], sizeof t[i]);
    memcpy(c, t, sizeof t);
}

bool reel_ocr_region_of(const reel_detection *d, reel_ocr_region *r)
{
    const float box[4][2] = { { d->x0, d->y0 }, { d->x1, d->y0 }, { d->x1, d->y1 }, { d->x0, d->y1 } };
    memcpy(r->c, d->n_landmarks == 4 ? d->landmarks : box, sizeof box);
    r->w = fmaxf(dist(r->c[0], r->c[1]), dist(r->c[3], r->c[2]));
    r->h = fmaxf(dist(r->c[0], r->c[3]), dist(r->c[1], r->c[2]));
    if (r->h >= 1.5f * r->w) {
        rotate_corners(r->c, 1);
        float swap = r->w;
        r->w = r->h;
        r->h = swap;
    }
    return r->w >= 1 && r->h >= 1;
}

void reel_ocr_region_turn(reel_ocr_region *r)
{
    rotate_corners(r->c, 2);
}

int reel_ocr_crop_width(const reel_ocr_region *r, int height, int max_width)
{
    int cw = (int)ceilf((float)height * r->w / r->h);
    return CLAMP(cw, 1, max_width);
}

void reel_ocr_crop(const reel_ocr_frame *f, const reel_ocr_region *r, int cw, int height, int width, float *out)
{
    size_t plane = (size_t)height * (size_t)width;
    memset(out, 0, plane * 3 * sizeof *out);
    for (int y = 0; y < height; y++) {
        float ty = ((float)y + 0.5f) / (float)height;
        for (int x = 0; x < cw; x++) {
            float tx = ((float)x + 0.5f) / (float)cw, px = 0, py = 0, bgr[3];
            // Bilinear in the quad's corners: exact for rectangles.
            const float wt[4] = { (1 - tx) * (1 - ty), tx * (1 - ty), tx * ty, (1 - tx) * ty };
            for (int k = 0; k < 4; k++) {
                px += wt[k] * r->c[k][0];
                py += wt[k] * r->c[k][1];
            }
            sample(f, px, py, bgr);
            for (int ch = 0; ch < 3; ch++)
                out[(size_t)ch * plane + (size_t)y * (size_t)width + (size_t)x] = bgr[ch] / 127.5f - 1;
        }
    }
}
