// Closest-name hints for error messages ("did you mean 'fakesink'?").
#ifndef REEL_BASE_SUGGEST_H
#define REEL_BASE_SUGGEST_H

#include <stddef.h>

// The candidate closest to `word` by edit distance, when close enough to be a
// plausible typo (distance at most a third of the word's length, at least 1,
// or `word` is a prefix of it); otherwise NULL. Candidates may hold NULLs.
const char *reel_suggest(const char *word, const char *const *candidates, size_t n);

#endif
