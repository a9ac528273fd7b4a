// infer: runs an ONNX model on each tensor from preprocess and attaches the
// outputs to the frame the tensor was made from (reel_inference in
// include/reel/vision.h); the frame, not the tensor, travels on, so what
// follows works at full resolution. Several infers chain: each adds its own
// inference meta.
//
// Placed on a GPU, the model's nodes run there where reel has a Vulkan
// kernel for them, the rest on the cpu (the report says which, and the bytes
// that crossed); the frames stay in that device's memory.
#include <string.h>

#include "elements/manifest.h"
#include "reel/model.h"
#include "reel/reel.h"

enum { PRECISION_FP32, PRECISION_FP16 };

typedef struct infer_priv {
    char *model_spec;
    int threads, batch, precision, max_wait_ms;
    char *input_name;

    reel_model_file ref;
    reel_model *model;
    reel_session *session;
    int input;          // index of the input the tensors feed
    GPtrArray *pending; // tensors waiting for a batch to fill
    int64_t pending_since; // when the first of them came (monotonic µs)
    reel_buffer *crop_frame;  // the frame whose crops are coming (roi=detections)
    GPtrArray *crop_results;  // reel_inference *, one per crop so far
    uint8_t *scratch;         // for frames moved to this element's memory
    size_t scratch_size;
    bool noted;               // where the model ran is in the report
    bool on_device;           // the session runs on the element's GPU
    bool one_by_one;          // batch > 1 on a model that takes a batch of 1: a frame per inference
} infer_priv;

static const reel_enum_value precisions[] = {
    { "fp32", PRECISION_FP32, "32-bit floats" },
    { "fp16", PRECISION_FP16, "16-bit floats in the GPU's memory, sums in 32-bit (a GPU with fp16 support)" },
    { NULL },
};

static const reel_prop props[] = {
    { "model", REEL_PROP_STRING, offsetof(infer_priv, model_spec), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "an .onnx file (a manifest beside it, NAME.reel, gives defaults) or a model zoo name" },
    { "threads", REEL_PROP_INT, offsetof(infer_priv, threads), "1", 0, 256,
      .help = "threads of the model's kernels; 0: one per core (other elements share the cores)" },
    { "batch", REEL_PROP_INT, offsetof(infer_priv, batch), "1", 1, 64,
      .help = "frames per inference (the model's first input dim must be free; a model that takes a batch of "
              "1 runs them one inference each)" },
    { "max-wait-ms", REEL_PROP_INT, offsetof(infer_priv, max_wait_ms), "0", 0, 60000,
      .help = "a partial batch runs once its first frame has waited this long (0: wait for a full batch)" },
    { "input-name", REEL_PROP_STRING, offsetof(infer_priv, input_name), NULL,
      .help = "the model input the tensors feed; default: the first" },
    { "precision", REEL_PROP_ENUM, offsetof(infer_priv, precision), "fp32", .values = precisions,
      .help = "how the model's float tensors are kept on the device: fp16 halves their memory (nodes without a "
              "16-bit kernel run on the cpu); on the cpu, or a GPU without 16-bit floats, fp16 is an error" },
    { NULL },
};

static int load(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    if (s->model)
        return 0;
    GError *err = NULL;
    int rc = reel_model_resolve(s->model_spec, &s->ref, &err);
    if (rc == 0 && s->ref.manifest)
        rc = reel_manifest_apply(s->ref.manifest, "infer", e, &err);
    if (rc == 0 && !(s->model = reel_model_load(s->ref.path, &err)))
        rc = err->code;
    if (rc < 0) {
        rc = reel_element_error(e, rc, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    s->input = 0;
    for (int i = 0; s->input_name && i < reel_model_n_inputs(s->model); i++)
        if (strcmp(reel_model_input(s->model, i)->name, s->input_name) == 0)
            s->input = i;
    const reel_model_io *in = reel_model_input(s->model, s->input);
    if (s->input_name && strcmp(in->name, s->input_name) != 0)
        return reel_element_error(e, REEL_EINVAL, "model %s has no input '%s' (its first is '%s')", s->ref.path,
                                  s->input_name, in->name);
    if (reel_model_n_inputs(s->model) > 1)
        return reel_element_error(e, REEL_EUNSUPPORTED, "model %s has %d inputs; infer feeds models of one input",
                                  s->ref.path, reel_model_n_inputs(s->model));
    // A model exported with its batch fixed at 1 takes the frames one by
    // one: the same results as batch=1, whatever batch says.
    s->one_by_one = s->batch > 1 && in->dims[0] == 1;
    if (s->batch > 1 && in->dims[0] > 1 && in->dims[0] != s->batch)
        return reel_element_error(e, REEL_EINVAL, "batch=%d but model %s's input %s takes a batch of %" G_GINT64_FORMAT,
                                  s->batch, s->ref.path, in->name, in->dims[0]);
    return 0;
}

// Frames per inference.
static int batch_size(const infer_priv *s)
{
    return s->one_by_one ? 1 : s->batch;
}

// Pass 1: ask preprocess for the model's input shape (free dims left open).
static int want(reel_element *e, int pad, reel_caps *want)
{
    (void)pad;
    infer_priv *s = reel_element_priv(e);
    int rc = load(e);
    if (rc < 0)
        return rc;
    const reel_model_io *in = reel_model_input(s->model, s->input);
    reel_caps c = *want;
    c.media = REEL_MEDIA_TENSOR;
    c.dtype = in->dtype;
    c.rank = in->rank;
    for (int i = 0; i < in->rank && i < REEL_TENSOR_MAX_RANK; i++)
        c.shape[i] = in->dims[i] > 0 ? in->dims[i] : 0;
    if (s->batch > 1 || in->dims[0] <= 0)
        c.shape[0] = 1; // one frame per tensor; infer makes the batch
    if (!reel_caps_intersect(want, &c, want))
        return reel_element_error(e, REEL_EFORMAT, "model %s's input does not fit what comes in", s->ref.path);
    return 0;
}

// The frames: what the element before the tensor's maker takes in.
static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    reel_element *at = e;
    for (int steps = 0; steps < 32 && (at = reel_element_upstream(at, 0)); steps++) {
        const reel_caps *f = reel_element_input_format(at, 0);
        if (f && f->media == REEL_MEDIA_VIDEO_RAW) {
            unsigned memory = out->memory;
            *out = *f;
            // The frames stay where they are; the element's side decides.
            if (memory == REEL_MEMORY_HOST || memory == REEL_MEMORY_DEVICE)
                out->memory = memory;
            return 0;
        }
    }
    return reel_element_error(e, REEL_EFORMAT, "infer takes tensors made from frames: put a preprocess before it");
}

static int start(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    int rc = load(e);
    if (rc < 0)
        return rc;
    // On a GPU the model's nodes go there (those without a kernel run on
    // the cpu); placement=strict makes any such node an error.
    reel_device *dev = reel_element_device(e);
    bool gpu = dev && reel_device_info_of(dev)->backend != REEL_BACKEND_CPU;
    GError *err = NULL;
    s->session = reel_session_new(s->model,
                                  reel_session_params(.threads = s->threads, .device = gpu ? dev : NULL,
                                                      .strict = gpu && reel_element_placement_strict(e),
                                                      .precision = s->precision == PRECISION_FP16
                                                                       ? REEL_PRECISION_FP16
                                                                       : REEL_PRECISION_FP32),
                                  &err);
    if (!s->session) {
        rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    s->pending = g_ptr_array_new();
    s->crop_results = g_ptr_array_new();
    s->noted = false;
    s->on_device = gpu;
    if (s->one_by_one)
        reel_element_info(e, "model %s takes a batch of 1: batch=%d runs one inference per frame (as batch=1 does)",
                          s->ref.name, s->batch);
    return 0;
}

// After each inference on a GPU: the bytes the model's run moved between
// host and device go into the element's count; after the first, where the
// nodes ran goes into the report.
static void note_placement(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    if (!s->on_device)
        return;
    reel_session_placement p;
    reel_session_placement_of(s->session, &p);
    reel_element_xfer(e)->to_device += p.bytes_to_device;
    reel_element_xfer(e)->to_host += p.bytes_to_host;
    if (s->noted)
        return;
    s->noted = true;
    const char *fp16 = s->precision == PRECISION_FP16 ? " (fp16)" : "";
    if (p.cpu_nodes == 0)
        reel_element_note_placement(e, "model %s%s: all %d nodes on the device; per inference %" G_GINT64_FORMAT
                                       " bytes to the device, %" G_GINT64_FORMAT " back (the outputs)",
                                    s->ref.name, fp16, p.device_nodes, p.bytes_to_device, p.bytes_to_host);
    else
        reel_element_note_placement(e, "model %s%s: %d nodes on the device, %d on the cpu in %d partitions (%s); "
                                       "%" G_GINT64_FORMAT " bytes to the device, %" G_GINT64_FORMAT
                                       " back per inference",
                                    s->ref.name, fp16, p.device_nodes, p.cpu_nodes, p.partitions, p.cpu_reasons,
                                    p.bytes_to_device, p.bytes_to_host);
}

// The tensor as the session takes it: itself when in host memory or (a
// session on the device, one tensor at a time) in the device's memory; else
// read back from the device.
static reel_buffer *session_input(reel_element *e, reel_buffer *t, bool device_ok)
{
    if (!t->mem || device_ok)
        return reel_buffer_ref(t);
    reel_caps f = t->format;
    f.memory = REEL_MEMORY_HOST;
    reel_buffer *h = reel_buffer_new_format(&f);
    if (h && reel_mem_download(t->mem, 0, h->data, h->size, reel_element_xfer(e)) < 0)
        reel_buffer_unref(&h);
    return h;
}

static void unref_buffer(void *b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

static void free_tensor(void *t)
{
    reel_tensor *tensor = t;
    reel_tensor_free(&tensor);
}

// Runs the session on a tensor buffer (host or the session's device's);
// outputs[] gets its outputs as buffers. Neither way copies: the session
// sees the buffer's memory, the output buffers wrap the session's tensors.
static int run_session(reel_element *e, reel_buffer *input, reel_buffer **outputs)
{
    infer_priv *s = reel_element_priv(e);
    const reel_caps *f = &input->format;
    reel_tensor *in = input->mem ? reel_tensor_new_device(f->dtype, f->rank, f->shape, input->mem)
                                 : reel_tensor_wrap(f->dtype, f->rank, f->shape, input->data, input->size,
                                                    unref_buffer, reel_buffer_ref(input));
    if (!in)
        return reel_element_error(e, REEL_EINTERNAL, "the input tensor's memory does not hold its shape");
    int n_out = reel_model_n_outputs(s->model);
    reel_tensor **out = g_new0(reel_tensor *, n_out + 1);
    GError *err = NULL;
    int rc = reel_session_run(s->session, &in, out, &err);
    reel_tensor_free(&in);
    if (rc < 0) {
        rc = reel_element_error(e, rc, "%s", err->message);
        g_error_free(err);
    }
    for (int i = 0; i < n_out; i++) {
        if (rc < 0)
            break;
        reel_caps of = { .media = REEL_MEDIA_TENSOR, .memory = REEL_MEMORY_HOST, .dtype = out[i]->dtype,
                         .rank = out[i]->rank };
        memcpy(of.shape, out[i]->shape, sizeof of.shape);
        reel_tensor *t = g_steal_pointer(&out[i]);
        if (!(outputs[i] = reel_buffer_new_wrapped(&of, t->data, t->nbytes, free_tensor, t)))
            rc = reel_element_error(e, REEL_ENOMEM, "out of memory for output %d", i);
    }
    for (int i = 0; i < n_out; i++)
        reel_tensor_free(&out[i]);
    g_free(out);
    if (rc == 0)
        note_placement(e);
    return rc;
}

// One batch tensor from n host tensors of one frame each.
static reel_buffer *stack(GPtrArray *tensors)
{
    const reel_buffer *first = tensors->pdata[0];
    reel_caps f = first->format;
    f.shape[0] = tensors->len;
    reel_buffer *b = reel_buffer_new_format(&f);
    for (guint i = 0; b && i < tensors->len; i++)
        memcpy(b->data + i * first->size, ((reel_buffer *)tensors->pdata[i])->data, first->size);
    return b;
}

// Output i for frame k of a batch of n: a slice along the first dim.
static reel_buffer *slice(const reel_buffer *out, int k, int n)
{
    if (n == 1)
        return reel_buffer_ref((reel_buffer *)out);
    reel_caps f = out->format;
    f.shape[0] = 1;
    reel_buffer *b = reel_buffer_new_format(&f);
    if (b)
        memcpy(b->data, out->data + (size_t)k * (out->size / (size_t)n), b->size);
    return b;
}

// The results for frame k of a batch of n, as the meta the frame gets.
static reel_inference *results(infer_priv *s, const reel_buffer *tensor, reel_buffer **outputs, int k, int n)
{
    const reel_transform *t = reel_buffer_get_meta(tensor, &reel_transform_meta);
    int n_out = reel_model_n_outputs(s->model);
    reel_inference *inf = reel_inference_new(n_out);
    g_strlcpy(inf->model, s->ref.name, sizeof inf->model);
    inf->manifest = g_strdup(s->ref.manifest);
    if (t) {
        inf->transform = *t;
        inf->has_transform = true;
    }
    for (int i = 0; i < n_out; i++) {
        inf->names[i] = g_strdup(reel_model_output(s->model, i)->name);
        inf->outputs[i] = slice(outputs[i], k, n);
    }
    return inf;
}

// Attaches the metas to the frame and sends it on. The tensors that held
// references to the frame are gone by now, so the frame is usually ours
// alone and takes the metas without a copy.
// The frame in the memory this element's output is in: a preprocess on
// another device than infer saw the frame there (the bytes are counted).
static int move_frame(reel_element *e, reel_buffer **frame)
{
    infer_priv *s = reel_element_priv(e);
    bool device = reel_element_output_format(e, 0)->memory == REEL_MEMORY_DEVICE;
    if (device == ((*frame)->mem != NULL))
        return 0;
    GError *err = NULL;
    reel_xfer *acc = reel_element_xfer(e);
    reel_buffer *moved = device ? reel_buffer_to_device(*frame, reel_element_device(e), &s->scratch,
                                                        &s->scratch_size, acc, &err)
                                : reel_buffer_to_host(*frame, &s->scratch, &s->scratch_size, acc, &err);
    reel_buffer_unref(frame);
    if (!moved) {
        int rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    *frame = moved;
    return 0;
}

static int push_frame(reel_element *e, reel_buffer *frame, reel_inference **metas, int n)
{
    int rc = move_frame(e, &frame);
    if (rc == 0)
        rc = reel_buffer_make_writable(&frame);
    for (int i = 0; i < n; i++) {
        if (rc == 0)
            reel_buffer_add_meta(frame, &reel_inference_meta, metas[i]);
        else
            reel_inference_meta.free(metas[i]); // never attached
    }
    if (rc < 0) {
        bool reported = frame == NULL;
        reel_buffer_unref(&frame);
        return reported ? rc : reel_element_error(e, rc, "cannot copy a shared frame to attach results to");
    }
    return reel_element_push(e, 0, frame);
}

static int attach_and_push(reel_element *e, reel_buffer *tensor, reel_buffer **outputs, int k, int n)
{
    infer_priv *s = reel_element_priv(e);
    reel_buffer *frame = reel_buffer_ref(reel_buffer_source_frame(tensor));
    reel_inference *inf = results(s, tensor, outputs, k, n);
    reel_buffer_unref(&tensor);
    return push_frame(e, frame, &inf, 1);
}

static int run_batch(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    int n = (int)s->pending->len, n_out = reel_model_n_outputs(s->model), rc = 0;
    if (n == 0)
        return 0;
    GPtrArray *host = g_ptr_array_new_with_free_func(NULL);
    for (int i = 0; i < n && rc == 0; i++) {
        reel_buffer *h = session_input(e, s->pending->pdata[i], s->on_device && n == 1);
        if (!h)
            rc = reel_element_error(e, REEL_EIO, "cannot read the input tensor back from the device");
        else
            g_ptr_array_add(host, h);
    }
    reel_buffer *input = rc == 0 ? (n == 1 ? reel_buffer_ref(host->pdata[0]) : stack(host)) : NULL;
    reel_buffer **outputs = g_new0(reel_buffer *, n_out + 1);
    if (rc == 0 && !input)
        rc = reel_element_error(e, REEL_ENOMEM, "out of memory for a batch of %d", n);
    else if (rc == 0)
        rc = run_session(e, input, outputs);
    // The host copies hold the tensors, which hold their frames: let go of
    // them first, so that each frame is ours alone (no copy) when it goes on.
    for (guint i = 0; i < host->len; i++) {
        reel_buffer *h = host->pdata[i];
        reel_buffer_unref(&h);
    }
    g_ptr_array_free(host, TRUE);
    reel_buffer_unref(&input);
    for (int k = 0; k < n; k++) {
        reel_buffer *t = s->pending->pdata[k];
        if (rc == 0)
            rc = attach_and_push(e, t, outputs, k, n);
        else
            reel_buffer_unref(&t);
    }
    g_ptr_array_set_size(s->pending, 0);
    reel_element_wake_at(e, 0);
    for (int i = 0; i < n_out; i++)
        reel_buffer_unref(&outputs[i]);
    g_free(outputs);
    return rc;
}

// When the pending partial batch must run (monotonic µs).
static int64_t batch_deadline(const infer_priv *s)
{
    return s->pending_since + (int64_t)s->max_wait_ms * 1000;
}

// Runs the model on one tensor now; outputs[] gets its outputs.
static int run_one(reel_element *e, reel_buffer *tensor, reel_buffer **outputs)
{
    infer_priv *s = reel_element_priv(e);
    reel_buffer *input = session_input(e, tensor, s->on_device);
    if (!input)
        return reel_element_error(e, REEL_EIO, "cannot read the input tensor back from the device");
    int rc = run_session(e, input, outputs);
    reel_buffer_unref(&input);
    return rc;
}

// A crop of detection `index` of `count` of its frame (preprocess
// roi=detections): its results are kept until the frame's last crop, then
// the frame goes on once with all of them (count 0: at once, untouched).
static int process_crop(reel_element *e, reel_buffer *tensor, const reel_crop *crop)
{
    infer_priv *s = reel_element_priv(e);
    reel_buffer *frame = reel_buffer_source_frame(tensor);
    if (crop->index == 0) {
        reel_buffer_unref(&s->crop_frame);
        g_ptr_array_set_size(s->crop_results, 0);
        s->crop_frame = reel_buffer_ref(frame);
    } else if (frame != s->crop_frame) {
        reel_buffer_unref(&tensor);
        return reel_element_error(e, REEL_EINTERNAL, "crops of two frames interleaved");
    }
    int rc = 0;
    if (crop->count > 0) {
        int n_out = reel_model_n_outputs(s->model);
        reel_buffer **outputs = g_new0(reel_buffer *, n_out + 1);
        if ((rc = run_one(e, tensor, outputs)) == 0) {
            reel_inference *inf = results(s, tensor, outputs, 0, 1);
            inf->detection = crop->index;
            g_ptr_array_add(s->crop_results, inf);
        }
        for (int i = 0; i < n_out; i++)
            reel_buffer_unref(&outputs[i]);
        g_free(outputs);
    }
    bool last = crop->count == 0 || crop->index == crop->count - 1;
    reel_buffer_unref(&tensor);
    if (rc < 0 || !last)
        return rc;
    reel_buffer *f = g_steal_pointer(&s->crop_frame);
    int n = (int)s->crop_results->len;
    reel_inference **metas = (reel_inference **)g_ptr_array_steal(s->crop_results, NULL);
    s->crop_results = g_ptr_array_new();
    rc = push_frame(e, f, metas, n);
    g_free(metas);
    return rc;
}

static int process(reel_element *e, int pad, reel_buffer *tensor)
{
    (void)pad;
    infer_priv *s = reel_element_priv(e);
    if (!reel_buffer_source_frame(tensor)) {
        reel_buffer_unref(&tensor);
        return reel_element_error(e, REEL_EFORMAT, "the tensor has no frame: infer takes tensors from preprocess");
    }
    const reel_crop *crop = reel_buffer_get_meta(tensor, &reel_crop_meta);
    if (crop)
        return process_crop(e, tensor, crop);
    int64_t now = g_get_monotonic_time();
    if (s->pending->len == 0) {
        s->pending_since = now;
        // A partial batch runs in time even when no further frame comes.
        if (s->max_wait_ms > 0 && batch_size(s) > 1)
            reel_element_wake_at(e, batch_deadline(s));
    }
    g_ptr_array_add(s->pending, tensor);
    bool waited = s->max_wait_ms > 0 && now >= batch_deadline(s);
    return (int)s->pending->len >= batch_size(s) || waited ? run_batch(e) : 0;
}

static int on_timeout(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    if (s->pending->len == 0)
        return 0;
    if (g_get_monotonic_time() < batch_deadline(s)) { // a later batch's deadline
        reel_element_wake_at(e, batch_deadline(s));
        return 0;
    }
    return run_batch(e);
}

// End of stream: a last, partial batch.
static int flush(reel_element *e)
{
    return run_batch(e);
}

static void stop(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    if (s->pending) {
        for (guint i = 0; i < s->pending->len; i++) {
            reel_buffer *t = s->pending->pdata[i];
            reel_buffer_unref(&t);
        }
        g_ptr_array_free(s->pending, TRUE);
        s->pending = NULL;
    }
    reel_buffer_unref(&s->crop_frame);
    g_clear_pointer(&s->scratch, g_free);
    s->scratch_size = 0;
    if (s->crop_results) {
        for (guint i = 0; i < s->crop_results->len; i++)
            reel_inference_meta.free(s->crop_results->pdata[i]);
        g_ptr_array_free(s->crop_results, TRUE);
        s->crop_results = NULL;
    }
    reel_session_destroy(&s->session);
}

static void uninit(reel_element *e)
{
    infer_priv *s = reel_element_priv(e);
    stop(e);
    reel_model_unref(&s->model);
    reel_model_file_clear(&s->ref);
}

const reel_element_class reel_infer_class = {
    .name = "infer",
    .description = "Runs an ONNX model on tensors from preprocess; the results travel on with the frame",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(infer_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "tensor",
    .output_caps = "video/raw",
    .want = want,
    .configure = configure,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .uninit = uninit,
    .timeout = on_timeout,
};
