// Greedy CTC decoding of a text recognizer's output (PaddleOCR's CTCLabelDecode)
// against its key list: plain functions, for tests.
#ifndef REEL_ELEMENTS_CTC_H
#define REEL_ELEMENTS_CTC_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

// A recognizer's classes: 0 is CTC's blank, 1..n the key file's lines (one
// character each, UTF-8), then " " when `space` (PaddleOCR's use_space_char).
typedef struct reel_ctc_keys {
    char **keys; // n + 2 entries, keys[0] "" (blank), NULL-terminated
    int n;       // classes, blank included
} reel_ctc_keys;

// Loads a key file (one key per line, "\n" or "\r\n"; a last newline ends
// the last key). Returns 0, or an error code with *error set.
int reel_ctc_keys_load(const char *path, bool space, reel_ctc_keys *keys, GError **error);
void reel_ctc_keys_clear(reel_ctc_keys *keys);

// Decodes steps x classes probabilities: the best class of each step,
// repeats merged, blanks dropped. Writes the text into out (cap bytes,
// NUL-terminated; a key that does not fit whole ends it) and returns the
// mean probability of the kept steps, 0 when none.
float reel_ctc_greedy(const float *probs, int steps, const reel_ctc_keys *keys, char *out, size_t cap);

#endif
