// Greedy CTC decoding (elements/ctc.h).
#include "elements/ctc.h"

#include <string.h>

#include "reel/reel.h"

int reel_ctc_keys_load(const char *path, bool space, reel_ctc_keys *keys, GError **error)
{
    memset(keys, 0, sizeof *keys);
    char *text = NULL;
    gsize size = 0;
    if (!g_file_get_contents(path, &text, &size, error))
        return REEL_EIO;
    if (!g_utf8_validate(text, (gssize)size, NULL)) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "key file %s is not UTF-8", path);
        g_free(text);
        return REEL_EFORMAT;
    }
    if (size > 0 && text[size - 1] == '\n')
        text[size - 1] = '\0';
    char **lines = g_strsplit(text, "\n", -1);
    g_free(text);
    int n = (int)g_strv_length(lines);
    if (size == 0 || n == 0) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "key file %s has no keys", path);
        g_strfreev(lines);
        return REEL_EFORMAT;
    }
    keys->keys = g_new0(char *, (size_t)n + 3);
    keys->keys[0] = g_strdup("");
    for (int i = 0; i < n; i++) {
        size_t len = strlen(lines[i]);
        if (len && lines[i][len - 1] == '\r')
            lines[i][len - 1] = '\0';
        keys->keys[i + 1] = g_steal_pointer(&lines[i]);
    }
    keys->n = n + 1;
    if (space)
        keys->keys[keys->n++] = g_strdup(" ");
    g_free(lines); // its strings are the keys now
    return 0;
}

void reel_ctc_keys_clear(reel_ctc_keys *keys)
{
    g_strfreev(keys->keys);
    keys->keys = NULL;
    keys->n = 0;
}

float reel_ctc_greedy(const float *probs, int steps, const reel_ctc_keys *keys, char *out, size_t cap)
{
    size_t len = 0;
    bool full = cap == 0;
    double sum = 0;
    int kept = 0, prev = 0;
    for (int t = 0; t < steps; t++) {
        const float *p = probs + (size_t)t * (size_t)keys->n;
        int best = 0;
        for (int c = 1; c < keys->n; c++)
            if (p[c] > p[best])
                best = c;
        if (best != 0 && best != prev) {
            sum += p[best];
            kept++;
            size_t k = strlen(keys->keys[best]);
            full = full || len + k + 1 > cap;
            if (!full) {
                memcpy(out + len, keys->keys[best], k);
                len += k;
            }
        }
        prev = best;
    }
    if (cap)
        out[len] = '\0';
    return kept ? (float)(sum / kept) : 0;
}
