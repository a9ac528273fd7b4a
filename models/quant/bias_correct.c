// Bias correction of quantized conv weights (see bias_correct.h).
#include <math.h>

#include <glib.h>

#include "models/quant/bias_correct.h"

void chan_stats_add(chan_stats *m, const float *v, int rank, const int64_t *shape)
{
    if (m->channels < 0 || rank < 2 || shape[1] <= 0)
        return;
    int64_t n = shape[0], c = shape[1], inner = 1;
    for (int d = 2; d < rank; d++)
        inner *= shape[d];
    if (m->channels == 0) {
        m->channels = c;
        m->sum = g_new0(double, c);
        m->absmax = g_new0(double, c);
    } else if (m->channels != c) { // a varying layout: no means
        m->channels = -1;
        return;
    }
    for (int64_t b = 0; b < n; b++)
        for (int64_t k = 0; k < c; k++) {
            const float *p = v + (b * c + k) * inner;
            double s = 0, a = m->absmax[k];
            for (int64_t i = 0; i < inner; i++) {
                s += p[i];
                a = fabs(p[i]) > a ? fabs(p[i]) : a;
            }
            m->sum[k] += s;
            m->absmax[k] = a;
        }
    m->count += n * inner;
}

void chan_stats_clear(chan_stats *m)
{
    g_free(m->sum);
    g_free(m->absmax);
    *m = (chan_stats){ 0 };
}

bool conv_bias_shift(const float *w, const int8_t *wq, const float *scales, bool per_channel, int64_t out_channels,
                     int64_t inner, int64_t kernel, int64_t group, const chan_stats *mean, float *delta)
{
    if (mean->channels <= 0 || mean->count == 0 || group < 1 || kernel < 1 || inner % kernel ||
        out_channels % group || mean->channels != inner / kernel * group)
        return false;
    int64_t in_per_group = inner / kernel, out_per_group = out_channels / group;
    for (int64_t o = 0; o < out_channels; o++) {
        double s = 0, scale = scales[per_channel ? o : 0];
        for (int64_t i = 0; i < in_per_group; i++) {
            double m = mean->sum[o / out_per_group * in_per_group + i] / (double)mean->count, e = 0;
            for (int64_t k = 0; k < kernel; k++) {
                int64_t at = (o * in_per_group + i) * kernel + k;
                e += wq[at] * scale - w[at];
            }
            s += e * m;
        }
        delta[o] = (float)s;
    }
    return true;
}
