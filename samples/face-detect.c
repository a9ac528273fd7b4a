// Face detection from C: a pipeline from text ends in an appsink, and the
// application reads each frame's detections (boxes in frame pixels, score,
// track id, landmarks) as the frames come out.
//
//   scripts/fetch-models blazeface-front
//   build/samples/sample_face_detect cache/media/faces-720p.mp4
#include <stdio.h>

#include <reel/reel.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s VIDEO [MODEL]   (MODEL: a zoo name or .onnx file; default blazeface-front)\n",
                argv[0]);
        return 2;
    }
    reel_init();
    char *text = g_strdup_printf("source location=\"%s\" ! decode ! preprocess ! infer model=%s ! detect ! track"
                                 " ! appsink name=out max-buffers=4",
                                 argv[1], argc > 2 ? argv[2] : "blazeface-front");
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, NULL, &err);
    g_free(text);
    if (!p || reel_pipeline_start(p, &err) < 0)
        goto fail;
    reel_element *out = reel_pipeline_find(p, "out");
    reel_buffer *frame;
    while ((frame = reel_appsink_pull(out, -1))) {
        const reel_detections *d = reel_buffer_get_meta(frame, &reel_detections_meta);
        printf("frame %lld: %d face%s", (long long)frame->frame_number, d ? d->n : 0, d && d->n == 1 ? "" : "s");
        for (int i = 0; d && i < d->n; i++) {
            const reel_detection *f = &d->items[i];
            printf("  [%.0f,%.0f %.0fx%.0f %.2f", f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0, f->score);
            if (f->track_id >= 0)
                printf(" #%lld", (long long)f->track_id);
            printf("]");
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
