// reel — what vision elements attach to buffers: the transform a preprocess
// applied, the frame a tensor was made from, and detections.
#ifndef REEL_VISION_H
#define REEL_VISION_H

#include <stdint.h>

#include "buffer.h"
#include "export.h"

// The map from frame pixels to tensor pixels a preprocess applied, attached
// to its output tensor: tensor_x = frame_x * ax + bx, tensor_y = frame_y * ay
// + by (continuous coordinates, pixel edges at integers).
typedef struct reel_transform {
    double ax, bx, ay, by;
    int frame_width, frame_height;   // the frame it came from
    int tensor_width, tensor_height; // the tensor's spatial size
} reel_transform;
REEL_API extern const reel_meta_type reel_transform_meta;

// Tensor pixels back to frame pixels, and the other way.
REEL_API void reel_transform_to_frame(const reel_transform *t, double *x, double *y);
REEL_API void reel_transform_to_tensor(const reel_transform *t, double *x, double *y);

// The frame a tensor was made from (a reference, dropped with the tensor), so
// that inference results can travel on with the full-resolution frame.
REEL_API extern const reel_meta_type reel_source_frame_meta;
// The source frame of `tensor`, borrowed, or NULL.
REEL_API reel_buffer *reel_buffer_source_frame(const reel_buffer *tensor);
// Attaches a new reference to `frame` to `tensor`.
REEL_API void reel_buffer_set_source_frame(reel_buffer *tensor, reel_buffer *frame);

// Landmarks of one detection: BlazeFace's six, or COCO's 17 pose keypoints.
#define REEL_MAX_LANDMARKS 17
#define REEL_LABEL_MAX 32
#define REEL_TEXT_MAX 128

// One detected object, in frame pixels.
// A text detector (detect decoder=db) gives the rotated box of each text
// region as its 4 landmarks, clockwise from the top left as the text reads
// (top left, top right, bottom right, bottom left); x0..y1 bound them.
// ocr's angle classifier turns them with text it finds upside down.
typedef struct reel_detection {
    float x0, y0, x1, y1;
    float score;
    int class_id;          // -1: none
    char label[REEL_LABEL_MAX]; // "" when none
    int64_t track_id;      // -1: not tracked
    int n_landmarks;
    float landmarks[REEL_MAX_LANDMARKS][2];
    // Pose keypoints are landmarks with a confidence each (0..1, the
    // model's visibility score); landmark_scores is set only when scored.
    bool scored;
    float landmark_scores[REEL_MAX_LANDMARKS];
    // What `ocr` read in the region: UTF-8, NUL-terminated, cut at a
    // character boundary to fit; "" when none. text_score: the mean
    // probability of its characters (0 when none).
    char text[REEL_TEXT_MAX];
    float text_score;
} reel_detection;

// The detections of one frame: one meta of this type per frame.
typedef struct reel_detections {
    int n;
    reel_detection items[]; // n of them
} reel_detections;
REEL_API extern const reel_meta_type reel_detections_meta;

// A zeroed list of n detections (class and track ids -1), freed by the
// buffer it is attached to (or g_free()).
REEL_API reel_detections *reel_detections_new(int n);

// Instance masks of a frame's detections (detect decoder=yolov8-seg): one
// meta per frame, next to its reel_detections. A mask covers its detection's
// box rounded out to whole pixels, the rectangle x, y, width, height in frame
// pixels, and says which of its pixels are the object as run lengths, row
// by row over the rectangle (row-major, a run may go on into the next row),
// alternately off and on, starting with off (a first run of 0 when the top
// left pixel is on); pixels after the last run are off.
//
// Runs over the box, not the frame: outside the box a mask is empty by
// construction, so runs over the box are as few and their count does not
// grow with the frame; rows in frame order let a painter walk them as
// spans. A mask keeps at most REEL_MASK_MAX_RUNS runs (a convex shape needs
// about two per row: 4096 rows), so a frame's masks take at most
// max detections * 32 KiB; a mask cut there says truncated, its pixels past
// the last run kept read as off.
#define REEL_MASK_MAX_RUNS 8192
typedef struct reel_mask {
    int detection;            // index into the frame's detections
    int x, y, width, height;  // the rectangle, in frame pixels
    int first_run, n_runs;    // its runs: runs[first_run .. first_run + n_runs)
    bool truncated;
} reel_mask;

typedef struct reel_masks {
    int n, n_runs;
    reel_mask *items;         // n of them, in the same allocation
    uint32_t *runs;           // n_runs, every mask's, in the same allocation
} reel_masks;
REEL_API extern const reel_meta_type reel_masks_meta;
// Zeroed, with room for n masks and n_runs runs, freed by its buffer.
REEL_API reel_masks *reel_masks_new(int n, int n_runs);
// The mask of detection `detection`, or NULL.
REEL_API const reel_mask *reel_masks_find(const reel_masks *m, int detection);
// Writes the mask's pixels, width * height bytes row by row, 1 on, 0 off.
REEL_API void reel_mask_decode(const reel_masks *m, const reel_mask *mask, uint8_t *out);

// What an infer attached to a frame: the model's output tensors (host
// buffers, format.shape says their shapes) and the transform from the frame
// into the model's input. One meta per infer; chained infers add one each.
typedef struct reel_inference {
    char model[128];           // the model's name: zoo name or file stem
    char *manifest;            // path of its manifest (g_free'd), NULL when none
    reel_transform transform;  // frame -> model input
    bool has_transform;        // false when the tensor came without one
    int detection;             // the detection whose crop was the input; -1: the frame
    int n;
    char **names;              // output names, n of them
    reel_buffer **outputs;     // n tensors (one reference each)
} reel_inference;
REEL_API extern const reel_meta_type reel_inference_meta;

// A tensor cropped from one of its frame's detections (preprocess
// roi=detections): detection `index` of `count`. A frame without detections
// still sends one tensor, with count 0 and nothing in it, so that it travels
// on; infer collects a frame's crops and passes the frame on once.
typedef struct reel_crop {
    int index, count;
} reel_crop;
REEL_API extern const reel_meta_type reel_crop_meta;

// A zeroed inference with n outputs, freed by the buffer it is attached to.
REEL_API reel_inference *reel_inference_new(int n);
// The output called `name`, or when name is NULL the i-th; NULL if none.
REEL_API const reel_buffer *reel_inference_output(const reel_inference *inf, const char *name, int i);
// The last inference meta of frame b (from the last infer), or NULL.
REEL_API const reel_inference *reel_buffer_last_inference(const reel_buffer *b);

// Classes a classifier found for a frame (or for each detection, by index).
typedef struct reel_classification {
    int class_id;
    float score;
    char label[REEL_LABEL_MAX];
    int detection;             // index into the frame's detections; -1: the whole frame
} reel_classification;

typedef struct reel_classifications {
    int n;
    reel_classification items[];
} reel_classifications;
REEL_API extern const reel_meta_type reel_classifications_meta;
REEL_API reel_classifications *reel_classifications_new(int n);

// What `zones` found in a frame: per zone and line of its stream the
// counts so far (one entry for every class together, class_id -1, then one
// per class seen), and the events this frame brought.
typedef enum reel_region_event_type {
    REEL_EVENT_ENTER,   // a track's anchor came into a zone (after `inertia` frames inside)
    REEL_EVENT_LEAVE,   // ... and left it (after `inertia` frames outside, or lost)
    REEL_EVENT_LOITER,  // in a zone `loiter` seconds, once per visit
    REEL_EVENT_CROSS,   // a track's anchor crossed a line
} reel_region_event_type;

typedef struct reel_region_event {
    reel_region_event_type type;
    char region[REEL_LABEL_MAX]; // the zone's or line's name
    int64_t track_id;
    int class_id;
    char label[REEL_LABEL_MAX];
    int direction;      // cross: +1 "in" (from the left of the line, walking its first point to its second, to
                        // its right, in image coordinates), -1 "out"; else 0
    double dwell_s;     // leave, loiter: seconds in the zone since it entered; else 0
} reel_region_event;

typedef struct reel_region_count {
    char region[REEL_LABEL_MAX];
    bool line;
    int class_id;       // -1: every class together
    char label[REEL_LABEL_MAX];
    int occupancy;      // zones: tracks inside now
    int64_t in, out;    // zones: entered, left; lines: crossed in, out
} reel_region_count;

// A zone or line as drawn on this frame, in frame pixels (overlay).
#define REEL_REGION_MAX_POINTS 64
typedef struct reel_region_shape {
    char region[REEL_LABEL_MAX];
    bool line;          // points[0] to points[1]; else a closed polygon
    int n;
    float points[REEL_REGION_MAX_POINTS][2];
} reel_region_shape;

typedef struct reel_analytics {
    int n_counts, n_events, n_shapes;
    reel_region_count *counts;  // in the same allocation
    reel_region_event *events;
    reel_region_shape *shapes;  // the stream's zones and lines
} reel_analytics;
REEL_API extern const reel_meta_type reel_analytics_meta;
// Zeroed, with room for the counts, events and shapes, freed by its buffer.
REEL_API reel_analytics *reel_analytics_new(int n_counts, int n_events, int n_shapes);
REEL_API const char *reel_region_event_name(reel_region_event_type type); // "enter", "leave", "loiter", "cross"

#endif
