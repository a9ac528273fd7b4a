// A detector then a classifier on what it found: faces are detected, each
// face is cropped and resized for the classifier (preprocess
// roi=detections), and the classes of every face are printed per frame.
//
//   build/samples/sample_classify VIDEO CLASSIFIER.onnx [LABELS.txt]
// CLASSIFIER takes one image tensor and gives class scores (ImageNet-style:
// [1,3,H,W] in, [1,N] out); the preprocess normalization is ImageNet's.
#include <stdio.h>

#include <reel/reel.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s VIDEO CLASSIFIER.onnx [LABELS.txt]\n", argv[0]);
        return 2;
    }
    reel_init();
    char *labels = argc > 3 ? g_strdup_printf("labels=\"%s\"", argv[3]) : g_strdup("");
    char *text = g_strdup_printf(
        "source location=\"%s\" ! decode ! preprocess ! infer model=blazeface-front ! detect"
        " ! preprocess roi=detections mean=0.485,0.456,0.406 std=0.229,0.224,0.225"
        " ! infer model=\"%s\" ! classify top-k=3 %s ! appsink name=out",
        argv[1], argv[2], labels);
    g_free(labels);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, NULL, &err);
    g_free(text);
    if (!p || reel_pipeline_start(p, &err) < 0)
        goto fail;
    reel_buffer *frame;
    while ((frame = reel_appsink_pull(reel_pipeline_find(p, "out"), -1))) {
        const reel_classifications *c = reel_buffer_get_meta(frame, &reel_classifications_meta);
        printf("frame %lld:", (long long)frame->frame_number);
        for (int i = 0; c && i < c->n; i++) {
            const reel_classification *k = &c->items[i];
            printf(" face %d: %s%s%d (%.3f)", k->detection, k->label, k->label[0] ? " " : "class ", k->class_id,
                   k->score);
        }
        printf("\n");
        reel_buffer_unref(&frame);
    }
    if (reel_pipeline_wait(p, &err) < 0)
        goto fail;
    reel_pipeline_destroy(&p);
    return 0;
fail:
    fprintf(stderr, "%s\n", err->message);
    g_error_free(err);
    reel_pipeline_destroy(&p);
    return 1;
}
