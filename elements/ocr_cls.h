// ocr's angle classifier: PaddleOCR's text direction classifier (zoo model
// ppocr-cls) says of each upright-cut region whether it reads upside down,
// as PaddleOCR's TextClassifier does: the region scaled to the classifier's
// height (48) keeping its aspect, squeezed to at most its width (192) and
// padded right with zeros, [-1, 1] BGR; class 1 (180 degrees) with a
// probability above `threshold` turns the region. Regions go through in
// batches.
#ifndef REEL_ELEMENTS_OCR_CLS_H
#define REEL_ELEMENTS_OCR_CLS_H

#include "elements/manifest.h"
#include "elements/ocr_crop.h"

typedef struct reel_ocr_cls {
    reel_model_file ref;
    reel_model *model;
    reel_session *session;
    int height, width; // of its input
    int batch;         // regions a run: the model's fixed batch, else PaddleOCR's 6
    bool fixed_batch;  // the model wants exactly `batch` a run (the rest zeros)
} reel_ocr_cls;

// Loads the classifier (an .onnx file or a zoo name) and checks it is one:
// one float input [N,3,H,W], one output [N,2]. Returns 0, or an error code
// with *error set naming the model.
int reel_ocr_cls_open(reel_ocr_cls *c, const char *spec, int threads, GError **error);
void reel_ocr_cls_close(reel_ocr_cls *c);

// Classifies n regions of frame f; turns (reel_ocr_region_turn) each one it
// finds upside down with a probability above threshold and sets turned[i].
// Returns 0, or an error code with *error set.
int reel_ocr_cls_run(reel_ocr_cls *c, const reel_ocr_frame *f, reel_ocr_region *regions, int n, float threshold,
                     bool *turned, GError **error);

#endif
