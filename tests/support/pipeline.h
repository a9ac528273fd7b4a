// Pipeline steps the C tests share; each fails the running cmocka test
// with the pipeline's own error message.
#ifndef REEL_TESTS_PIPELINE_H
#define REEL_TESTS_PIPELINE_H

#include "reel/reel.h"

void reel_test_start(reel_pipeline *p);
void reel_test_wait(reel_pipeline *p);

// The report row of the element called `name` (the test fails without one).
reel_element_report reel_test_report_of(reel_pipeline *p, const char *name);

#endif
