// ONNX files -> IR, with the protobuf-c code generated from Debian's onnx.proto.
//
// Parse -> describe -> check: the whole ModelProto is unpacked, values are
// created for initializers, graph inputs and node outputs, then every node
// input is resolved (dangling inputs are errors) and the nodes are put in a
// topological order (a cycle is an error).
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/read_file.h"
#include "models/onnx/load.h"
#include "onnx.pb-c.h"
#include "reel/error.h"
#include "reel/limits.h"

// Larger files are refused before reading (REEL_LIMIT_MODEL_BYTES: protobuf
// itself caps messages at 2 GiB, and bigger weights belong in external data
// files). External data files may be larger, but no single tensor beyond
// REEL_LIMIT_TENSOR_BYTES and all of a model's tensors together not beyond
// REEL_LIMIT_MODEL_BYTES.
#define MAX_MODEL_BYTES reel_limit_get(REEL_LIMIT_MODEL_BYTES)
#define MAX_TENSOR_BYTES reel_limit_get(REEL_LIMIT_TENSOR_BYTES)

#if G_BYTE_ORDER != G_LITTLE_ENDIAN
#error "raw_data is little-endian; a big-endian host needs byte swapping here"
#endif

static reel_dtype dtype_from_onnx(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return REEL_DTYPE_FLOAT32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return REEL_DTYPE_UINT8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return REEL_DTYPE_INT8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return REEL_DTYPE_UINT16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return REEL_DTYPE_INT16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return REEL_DTYPE_INT32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return REEL_DTYPE_INT64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return REEL_DTYPE_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return REEL_DTYPE_FLOAT16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return REEL_DTYPE_FLOAT64;
    default: return REEL_DTYPE_NONE;
    }
}

static const char *onnx_dtype_name(int32_t t)
{
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
        "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
    };
    return t >= 0 && t < (int32_t)G_N_ELEMENTS(names) ? names[t] : "unknown";
}

static const char *tname(const Onnx__TensorProto *tp)
{
    return tp->name && *tp->name ? tp->name : "(unnamed)";
}

// Where a tensor's external data lies: a file beside the model, opened
// beneath the model's folder (a link planted there cannot lead out), and
// checked to hold the bytes the shape needs before anything is allocated.
typedef struct external_data {
    int fd;
    int64_t offset;
    const char *location;
} external_data;

static int open_external(const Onnx__TensorProto *tp, const char *dir, const char *what, int64_t nbytes,
                         external_data *x, GError **error)
{
    int64_t length = -1;
    x->fd = -1;
    x->offset = 0;
    x->location = NULL;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e->key || !e->value)
            continue;
        char *end;
        int64_t *number = strcmp(e->key, "offset") == 0 ? &x->offset : strcmp(e->key, "length") == 0 ? &length : NULL;
        if (strcmp(e->key, "location") == 0) {
            x->location = e->value;
        } else if (number) {
            errno = 0;
            *number = strtoll(e->value, &end, 10);
            if (errno || *end || *number < 0) {
                g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': bad external data %s '%s'", what,
                            tname(tp), e->key, e->value);
                return REEL_EFORMAT;
            }
        }
    }
    if (!x->location || !*x->location) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': external data without a location",
                    what, tname(tp));
        return REEL_EFORMAT;
    }
    if (!dir) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "%s '%s': external data '%s' cannot be read: the model was loaded from memory, not a file",
                    what, tname(tp), x->location);
        return REEL_EFORMAT;
    }
    if (g_path_is_absolute(x->location)) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "%s '%s': external data location '%s' must lie inside the model's directory", what,
                    tname(tp), x->location);
        return REEL_EFORMAT;
    }
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    x->fd = dfd < 0 ? -1 : reel_open_beneath(dfd, x->location, O_RDONLY | O_NONBLOCK);
    int err = errno;
    if (dfd >= 0)
        close(dfd);
    struct stat st;
    if (x->fd < 0) {
        bool out = err == EXDEV || err == ELOOP;
        g_set_error(error, REEL_ERROR, out ? REEL_EFORMAT : REEL_EIO,
                    out ? "%s '%s': external data location '%s' must lie inside the model's directory: %s"
                        : "%s '%s': cannot open external data '%s': %s",
                    what, tname(tp), x->location, reel_beneath_strerror(err));
        return out ? REEL_EFORMAT : REEL_EIO;
    }
    if (fstat(x->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s '%s': external data '%s' is not a regular file", what,
                    tname(tp), x->location);
        return REEL_EIO;
    }
    int64_t avail = x->offset > (int64_t)st.st_size ? 0 : (int64_t)st.st_size - x->offset;
    if (length < 0) // absent: the bytes the shape needs, from the offset on
        length = nbytes;
    if (length > avail || length != nbytes) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "%s '%s': external data '%s' holds %" G_GINT64_FORMAT
                    " bytes at offset %" G_GINT64_FORMAT ", the shape needs %" G_GINT64_FORMAT,
                    what, tname(tp), x->location, (gint64)(length < avail ? length : avail),
                    (gint64)x->offset, (gint64)nbytes);
        return REEL_EFORMAT;
    }
    return 0;
}

static int read_external(const Onnx__TensorProto *tp, const external_data *x, const char *what,
                         reel_tensor *t, GError **error)
{
    size_t done = 0;
    while (done < t->nbytes) {
        ssize_t n = pread(x->fd, (char *)t->data + done, t->nbytes - done, (off_t)(x->offset + (int64_t)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            g_set_error(error, REEL_ERROR, REEL_EIO, "%s '%s': reading external data '%s' failed: %s", what,
                        tname(tp), x->location, n < 0 ? g_strerror(errno) : "the file got shorter");
            return REEL_EIO;
        }
        done += (size_t)n;
    }
    return 0;
}

// What a model's tensors may cost together: where external data lives (NULL:
// none allowed) and the bytes taken so far, bounded by the model limit.
typedef struct tensor_budget {
    const char *dir;
    int64_t bytes;
} tensor_budget;

// A TensorProto as a host tensor. `what` says what it is for messages
// ("initializer", "attribute value of node 'x'"); its bytes count against
// the budget.
static reel_tensor *tensor_from_proto(const Onnx__TensorProto *tp, tensor_budget *budget,
                                      const char *what, GError **error)
{
    reel_dtype dt = dtype_from_onnx(tp->data_type);
    if (dt == REEL_DTYPE_NONE) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s '%s': data type %s is not supported",
                    what, tname(tp), onnx_dtype_name(tp->data_type));
        return NULL;
    }
    if (tp->n_dims > REEL_TENSOR_MAX_RANK) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s '%s': rank %zu exceeds %d", what,
                    tname(tp), tp->n_dims, REEL_TENSOR_MAX_RANK);
        return NULL;
    }
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': negative dim %" G_GINT64_FORMAT,
                        what, tname(tp), tp->dims[i]);
            return NULL;
        }
    }
    int rank = (int)tp->n_dims;
    int64_t count = reel_tensor_count(rank, tp->dims);
    size_t esize = reel_dtype_size(dt);
    int64_t nbytes;
    if (count < 0 || __builtin_mul_overflow(count, (int64_t)esize, &nbytes)
        || nbytes > MAX_TENSOR_BYTES) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': shape too large (over %" G_GINT64_FORMAT
                    " bytes, %s)", what, tname(tp), (gint64)MAX_TENSOR_BYTES,
                    reel_limit_env(REEL_LIMIT_TENSOR_BYTES));
        return NULL;
    }
    if (tp->segment) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s '%s': segmented tensors are not supported",
                    what, tname(tp));
        return NULL;
    }
    // Data inside the model is checked against the shape before allocating:
    // a few bytes that claim a huge shape must not cost gigabytes.
    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    size_t typed = tp->n_float_data + tp->n_double_data + tp->n_int64_data + tp->n_int32_data;
    if (!external && tp->has_raw_data && tp->raw_data.len != (uint64_t)nbytes) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': raw_data has %zu bytes, shape and type need %"
                    G_GINT64_FORMAT, what, tname(tp), tp->raw_data.len, (gint64)nbytes);
        return NULL;
    }
    if (!external && !tp->has_raw_data && typed < (uint64_t)count) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': holds %zu elements, shape needs %" G_GINT64_FORMAT,
                    what, tname(tp), typed, count);
        return NULL;
    }
    if (nbytes > MAX_MODEL_BYTES - budget->bytes) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': the model's tensors pass %" G_GINT64_FORMAT
                    " bytes together (%s)", what, tname(tp), (gint64)MAX_MODEL_BYTES,
                    reel_limit_env(REEL_LIMIT_MODEL_BYTES));
        return NULL;
    }
    budget->bytes += nbytes;
    external_data x = { .fd = -1 };
    if (external && open_external(tp, budget->dir, what, nbytes, &x, error) != 0) {
        if (x.fd >= 0)
            close(x.fd);
        return NULL;
    }
    reel_tensor *t = reel_tensor_new(dt, rank, tp->dims);
    if (external) {
        int rc = t ? read_external(tp, &x, what, t, error) : 0;
        close(x.fd);
        if (rc != 0)
            reel_tensor_free(&t);
        else if (!t)
            g_set_error(error, REEL_ERROR, REEL_ENOMEM, "%s '%s': cannot allocate %" G_GINT64_FORMAT " bytes",
                        what, tname(tp), nbytes);
        return t;
    }
    if (!t) {
        g_set_error(error, REEL_ERROR, REEL_ENOMEM, "%s '%s': cannot allocate %" G_GINT64_FORMAT " bytes",
                    what, tname(tp), nbytes);
        return NULL;
    }
    size_t stored = 0; // elements found in the typed fields
    bool typed_ok = true;
    if (tp->has_raw_data) {
        if (tp->raw_data.len != t->nbytes) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                        "%s '%s': raw_data has %zu bytes, shape and type need %zu", what, tname(tp),
                        tp->raw_data.len, t->nbytes);
            goto fail;
        }
        if (t->nbytes)
            memcpy(t->data, tp->raw_data.data, t->nbytes);
        return t;
    }
    switch (dt) {
    case REEL_DTYPE_FLOAT32:
        stored = tp->n_float_data;
        if (stored == (size_t)count && count)
            memcpy(t->data, tp->float_data, t->nbytes);
        typed_ok = !tp->n_int32_data && !tp->n_int64_data && !tp->n_double_data;
        break;
    case REEL_DTYPE_FLOAT64:
        stored = tp->n_double_data;
        if (stored == (size_t)count && count)
            memcpy(t->data, tp->double_data, t->nbytes);
        typed_ok = !tp->n_int32_data && !tp->n_int64_data && !tp->n_float_data;
        break;
    case REEL_DTYPE_INT64:
        stored = tp->n_int64_data;
        if (stored == (size_t)count && count)
            memcpy(t->data, tp->int64_data, t->nbytes);
        typed_ok = !tp->n_int32_data && !tp->n_float_data && !tp->n_double_data;
        break;
    default: // int32_data carries int32, int16, int8, uint16, uint8, bool and float16 bits
        stored = tp->n_int32_data;
        typed_ok = !tp->n_int64_data && !tp->n_float_data && !tp->n_double_data;
        if (stored != (size_t)count)
            break;
        for (int64_t i = 0; i < count; i++) {
            int32_t v = tp->int32_data[i];
            switch (dt) {
            case REEL_DTYPE_INT32: ((int32_t *)t->data)[i] = v; break;
            case REEL_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
            case REEL_DTYPE_UINT16:
            case REEL_DTYPE_FLOAT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
            case REEL_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
            case REEL_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
            case REEL_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
            default: break;
            }
        }
        break;
    }
    if (!typed_ok) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': data stored in a field of the wrong type for %s",
                    what, tname(tp), onnx_dtype_name(tp->data_type));
        goto fail;
    }
    if (stored != (size_t)count) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "%s '%s': holds %zu elements, shape needs %" G_GINT64_FORMAT, what, tname(tp),
                    stored, count);
        goto fail;
    }
    return t;
fail:
    reel_tensor_free(&t);
    return NULL;
}

// Reads a whole file of at most MAX_MODEL_BYTES.
static bool read_file(const char *path, const char *what, guint8 **data, gsize *len, GError **error)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot open %s '%s': %s", what, path, g_strerror(errno));
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s '%s' is not a regular file", what, path);
        return false;
    }
    if ((int64_t)st.st_size > MAX_MODEL_BYTES) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "%s '%s' is %" G_GINT64_FORMAT " bytes, over the limit of %" G_GINT64_FORMAT
                    " bytes (%s; larger weights belong in external data)",
                    what, path, (gint64)st.st_size, (gint64)MAX_MODEL_BYTES,
                    reel_limit_env(REEL_LIMIT_MODEL_BYTES));
        return false;
    }
    // Bounded again while reading: the file may have grown since.
    return reel_read_file(path, what, (gsize)MAX_MODEL_BYTES, reel_limit_env(REEL_LIMIT_MODEL_BYTES), (char **)data,
                          len, error) == 0;
}

reel_tensor *reel_onnx_read_tensor_file(const char *path, char **name, GError **error)
{
    guint8 *data = NULL;
    gsize len = 0;
    if (name)
        *name = NULL;
    if (!read_file(path, "tensor file", &data, &len, error))
        return NULL;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, data);
    g_free(data);
    if (!tp) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "'%s' is not an ONNX TensorProto", path);
        return NULL;
    }
    char *dir = g_path_get_dirname(path);
    tensor_budget budget = { .dir = dir };
    reel_tensor *t = tensor_from_proto(tp, &budget, "tensor", error);
    g_free(dir);
    if (t && name)
        *name = g_strdup(tp->name ? tp->name : "");
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return t;
}

// ---------------------------------------------------------------- graph

typedef struct loader {
    reel_ir_graph *g;
    GHashTable *by_name;   // value name -> index + 1
    tensor_budget budget;
} loader;

static int lookup(loader *L, const char *name)
{
    return GPOINTER_TO_INT(g_hash_table_lookup(L->by_name, name)) - 1;
}

static int add_value(loader *L, const char *name)
{
    int i = reel_ir_add_value(L->g, name);
    g_hash_table_insert(L->by_name, reel_ir_value_at(L->g, i)->name, GINT_TO_POINTER(i + 1));
    return i;
}

// Declared type of a graph input or output.
static int apply_value_info(const Onnx__ValueInfoProto *vi, reel_ir_value *v, const char *what,
                            GError **error)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp)
        return 0;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s '%s': only tensors are supported",
                    what, vi->name);
        return REEL_EUNSUPPORTED;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED) {
        v->dtype = dtype_from_onnx(tt->elem_type);
        if (v->dtype == REEL_DTYPE_NONE) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s '%s': data type %s is not supported",
                        what, vi->name, onnx_dtype_name(tt->elem_type));
            return REEL_EUNSUPPORTED;
        }
    }
    if (!tt->shape)
        return 0;
    if (tt->shape->n_dim > REEL_TENSOR_MAX_RANK) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s '%s': rank %zu exceeds %d", what,
                    vi->name, tt->shape->n_dim, REEL_TENSOR_MAX_RANK);
        return REEL_EUNSUPPORTED;
    }
    v->rank = (int)tt->shape->n_dim;
    for (int i = 0; i < v->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        v->dims[i] = REEL_DIM_UNKNOWN;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0) {
                g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                            "%s '%s': negative dim %" G_GINT64_FORMAT " at axis %d", what,
                            vi->name, d->dim_value, i);
                return REEL_EFORMAT;
            }
            v->dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                   && d->dim_param && *d->dim_param) {
            g_free(v->dim_names[i]);
            v->dim_names[i] = g_strdup(d->dim_param);
        }
    }
    if (reel_tensor_count(v->rank, v->dims) < 0) {
        // Unknown dims give -1 too; only static shapes can overflow.
        bool all_static = true;
        for (int i = 0; i < v->rank; i++)
            all_static &= v->dims[i] >= 0;
        if (all_static) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s': shape overflows", what, vi->name);
            return REEL_EFORMAT;
        }
    }
    return 0;
}

static int convert_attr(loader *L, const Onnx__NodeProto *np, const char *node_name,
                        const Onnx__AttributeProto *ap, reel_ir_attr *a, bool *skip, GError **error)
{
    int type = ap->has_type ? (int)ap->type : 0;
    if (!type) { // IR version 1 files leave the type out
        if (ap->n_ints) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        else if (ap->n_floats) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        else if (ap->n_strings) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
        else if (ap->t) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        else if (ap->has_s) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        else if (ap->has_f) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        else if (ap->has_i) type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    }
    (void)np;
    *skip = false;
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->type = REEL_ATTR_INT;
        a->i = ap->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->type = REEL_ATTR_FLOAT;
        a->f = ap->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a->type = REEL_ATTR_STRING;
        // An empty string may have no data at all: g_strndup(NULL, 0) would be NULL.
        a->s = ap->s.data ? g_strndup((const char *)ap->s.data, ap->s.len) : g_strdup("");
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a->type = REEL_ATTR_INTS;
        a->n = (int)ap->n_ints;
        a->ints = g_memdup2(ap->ints, sizeof(int64_t) * ap->n_ints);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->type = REEL_ATTR_FLOATS;
        a->n = (int)ap->n_floats;
        a->floats = g_memdup2(ap->floats, sizeof(float) * ap->n_floats);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        // RNN, GRU, LSTM's activations.
        a->type = REEL_ATTR_STRINGS;
        a->n = (int)ap->n_strings;
        a->strings = g_new0(char *, ap->n_strings + 1);
        for (size_t k = 0; k < ap->n_strings; k++)
            a->strings[k] = ap->strings[k].data ? g_strndup((const char *)ap->strings[k].data, ap->strings[k].len)
                                                : g_strdup("");
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        a->type = REEL_ATTR_TENSOR;
        if (!ap->t) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "node '%s': attribute '%s' has no tensor",
                        node_name, ap->name);
            return REEL_EFORMAT;
        }
        char *what = g_strdup_printf("attribute '%s' of node '%s'", ap->name, node_name);
        a->t = tensor_from_proto(ap->t, &L->budget, what, error);
        g_free(what);
        if (!a->t)
            return error && *error ? (*error)->code : REEL_EFORMAT;
        break;
    }
    default:
        // Graphs, sparse tensors, type protos: no op reel runs
        // takes them; the nodes that do are rejected as unsupported ops.
        *skip = true;
        break;
    }
    return 0;
}

// The value of a Constant node as a tensor.
static reel_tensor *constant_value(loader *L, const Onnx__NodeProto *np, const char *node_name,
                                   GError **error)
{
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        const char *an = ap->name ? ap->name : "";
        reel_tensor *t = NULL;
        if (strcmp(an, "value") == 0 && ap->t) {
            char *what = g_strdup_printf("value of Constant node '%s'", node_name);
            t = tensor_from_proto(ap->t, &L->budget, what, error);
            g_free(what);
            return t;
        } else if (strcmp(an, "value_float") == 0) {
            t = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
            *(float *)t->data = ap->f;
        } else if (strcmp(an, "value_int") == 0) {
            t = reel_tensor_new(REEL_DTYPE_INT64, 0, NULL);
            *(int64_t *)t->data = ap->i;
        } else if (strcmp(an, "value_floats") == 0) {
            int64_t n = (int64_t)ap->n_floats;
            t = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, &n);
            if (n)
                memcpy(t->data, ap->floats, t->nbytes);
        } else if (strcmp(an, "value_ints") == 0) {
            int64_t n = (int64_t)ap->n_ints;
            t = reel_tensor_new(REEL_DTYPE_INT64, 1, &n);
            if (n)
                memcpy(t->data, ap->ints, t->nbytes);
        } else {
            continue;
        }
        return t;
    }
    g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                "Constant node '%s': no supported value attribute (value, value_float(s), value_int(s))",
                node_name);
    return NULL;
}

static bool is_default_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

// Puts the nodes in a topological order, keeping the file's order where it
// already is one (Kahn's algorithm, always taking the earliest ready node).
static int topo_sort(reel_ir_graph *g, GError **error)
{
    guint n = g->nodes->len;
    int *pending = g_new0(int, n);                    // inputs not yet available
    GPtrArray *users = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint v = 0; v < g->values->len; v++)
        g_ptr_array_add(users, g_array_new(FALSE, FALSE, sizeof(int)));
    for (guint i = 0; i < n; i++) {
        reel_ir_node *node = reel_ir_node_at(g, (int)i);
        for (int k = 0; k < node->n_inputs; k++) {
            int v = node->inputs[k];
            if (v < 0 || reel_ir_value_at(g, v)->producer < 0)
                continue;
            pending[i]++;
            int ii = (int)i;
            g_array_append_val(users->pdata[v], ii);
        }
    }
    // A min-heap would be O(n log n); a sorted ready list scan is fine for
    // graphs of thousands of nodes.
    GArray *order = g_array_new(FALSE, FALSE, sizeof(int));
    bool *done = g_new0(bool, n);
    guint start = 0;
    while (order->len < n) {
        guint pick = n;
        for (guint i = start; i < n; i++)
            if (!done[i] && pending[i] == 0) {
                pick = i;
                break;
            }
        if (pick == n)
            break;
        done[pick] = true;
        g_array_append_val(order, pick);
        while (start < n && done[start])
            start++;
        reel_ir_node *node = reel_ir_node_at(g, (int)pick);
        for (int k = 0; k < node->n_outputs; k++) {
            int v = node->outputs[k];
            if (v < 0)
                continue;
            GArray *u = users->pdata[v];
            for (guint j = 0; j < u->len; j++)
                pending[g_array_index(u, int, j)]--;
        }
        // Earlier nodes may have become ready: rescan from the first not done.
    }
    int rc = 0;
    if (order->len < n) {
        // Walk back along inputs whose producers never ran until a node
        // repeats: that node lies on a cycle.
        guint bad = 0;
        while (done[bad])
            bad++;
        bool *seen = g_new0(bool, n);
        while (!seen[bad]) {
            seen[bad] = true;
            reel_ir_node *node = reel_ir_node_at(g, (int)bad);
            for (int k = 0; k < node->n_inputs; k++) {
                int v = node->inputs[k];
                int p = v < 0 ? -1 : reel_ir_value_at(g, v)->producer;
                if (p >= 0 && !done[p]) {
                    bad = (guint)p;
                    break;
                }
            }
        }
        g_free(seen);
        reel_ir_node *node = reel_ir_node_at(g, (int)bad);
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "the graph has a cycle: node '%s' (%s) depends on its own output", node->name,
                    node->op);
        rc = REEL_EFORMAT;
    } else {
        GPtrArray *sorted = g_ptr_array_sized_new(n);
        for (guint i = 0; i < n; i++)
            g_ptr_array_add(sorted, g->nodes->pdata[g_array_index(order, int, i)]);
        if (n)
            memcpy(g->nodes->pdata, sorted->pdata, sizeof(gpointer) * n);
        g_ptr_array_free(sorted, TRUE);
        for (guint i = 0; i < n; i++) {
            reel_ir_node *node = reel_ir_node_at(g, (int)i);
            for (int k = 0; k < node->n_outputs; k++)
                if (node->outputs[k] >= 0)
                    reel_ir_value_at(g, node->outputs[k])->producer = (int)i;
        }
    }
    g_free(done);
    g_array_free(order, TRUE);
    g_ptr_array_free(users, TRUE);
    g_free(pending);
    return rc;
}

static int build_graph(loader *L, const Onnx__ModelProto *mp, GError **error)
{
    reel_ir_graph *g = L->g;
    const Onnx__GraphProto *gp = mp->graph;

    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (is_default_domain(mp->opset_import[i]->domain))
            g->opset = (int)mp->opset_import[i]->version;
    if (g->opset <= 0) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "the model imports no opset of the default ONNX domain");
        return REEL_EUNSUPPORTED;
    }
    g->producer = g_strdup(mp->producer_name ? mp->producer_name : "");

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !*tp->name) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "initializer %zu has no name", i);
            return REEL_EFORMAT;
        }
        if (lookup(L, tp->name) >= 0) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "initializer '%s' is defined twice", tp->name);
            return REEL_EFORMAT;
        }
        reel_tensor *t = tensor_from_proto(tp, &L->budget, "initializer", error);
        if (!t)
            return (*error)->code;
        reel_ir_value_set_constant(reel_ir_value_at(g, add_value(L, tp->name)), t);
    }
    if (gp->n_sparse_initializer) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "sparse initializers are not supported");
        return REEL_EUNSUPPORTED;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || !*vi->name) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "graph input %zu has no name", i);
            return REEL_EFORMAT;
        }
        int v = lookup(L, vi->name);
        if (v >= 0 && reel_ir_value_at(g, v)->constant)
            continue; // an initializer: a constant (its default value)
        if (v >= 0) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "graph input '%s' is declared twice", vi->name);
            return REEL_EFORMAT;
        }
        v = add_value(L, vi->name);
        int rc = apply_value_info(vi, reel_ir_value_at(g, v), "graph input", error);
        if (rc)
            return rc;
        g_array_append_val(g->inputs, v);
    }

    // Node outputs first, so inputs may refer to nodes later in the file.
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *op = np->op_type ? np->op_type : "";
        char *name = np->name && *np->name ? g_strdup(np->name) : g_strdup_printf("%s_%zu", op, i);
        bool is_constant = is_default_domain(np->domain) && strcmp(op, "Constant") == 0;
        if (!*op) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "node '%s' has no op_type", name);
            g_free(name);
            return REEL_EFORMAT;
        }
        reel_ir_node *node = NULL;
        if (!is_constant) {
            node = g_new0(reel_ir_node, 1);
            node->name = name;
            node->op = is_default_domain(np->domain) ? g_strdup(op)
                                                     : g_strdup_printf("%s:%s", np->domain, op);
            g_ptr_array_add(g->nodes, node);
        }
        int *outs = g_new(int, np->n_output ? np->n_output : 1);
        for (size_t k = 0; k < np->n_output; k++) {
            const char *on = np->output[k];
            outs[k] = -1;
            if (!on || !*on)
                continue;
            if (lookup(L, on) >= 0) {
                g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                            "value '%s' is produced twice (again by node '%s')", on, node ? node->name : name);
                g_free(outs);
                if (is_constant)
                    g_free(name);
                return REEL_EFORMAT;
            }
            outs[k] = add_value(L, on);
            reel_ir_value_at(g, outs[k])->producer = node ? (int)g->nodes->len - 1 : -1;
        }
        if (is_constant) {
            int rc = 0;
            if (np->n_output != 1 || outs[0] < 0) {
                g_set_error(error, REEL_ERROR, REEL_EFORMAT, "Constant node '%s' needs one output", name);
                rc = REEL_EFORMAT;
            } else {
                reel_tensor *t = constant_value(L, np, name, error);
                if (t)
                    reel_ir_value_set_constant(reel_ir_value_at(g, outs[0]), t);
                else
                    rc = (*error)->code;
            }
            g_free(outs);
            g_free(name);
            if (rc)
                return rc;
            continue;
        }
        node->outputs = outs;
        node->n_outputs = (int)np->n_output;
    }

    // Inputs and attributes.
    guint ni = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (is_default_domain(np->domain) && strcmp(np->op_type, "Constant") == 0)
            continue;
        reel_ir_node *node = reel_ir_node_at(g, (int)ni++);
        node->inputs = g_new(int, np->n_input ? np->n_input : 1);
        node->n_inputs = (int)np->n_input;
        for (size_t k = 0; k < np->n_input; k++) {
            const char *in = np->input[k];
            node->inputs[k] = -1;
            if (!in || !*in)
                continue; // an omitted optional input
            int v = lookup(L, in);
            if (v < 0) {
                g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                            "node '%s' (%s): input '%s' is produced by no node, initializer or graph input",
                            node->name, node->op, in);
                return REEL_EFORMAT;
            }
            node->inputs[k] = v;
        }
        node->attrs = g_new0(reel_ir_attr, np->n_attribute ? np->n_attribute : 1);
        for (size_t k = 0; k < np->n_attribute; k++) {
            reel_ir_attr *a = &node->attrs[node->n_attrs];
            bool skip;
            int rc = convert_attr(L, np, node->name, np->attribute[k], a, &skip, error);
            if (rc) {
                node->n_attrs++; // free what was converted
                return rc;
            }
            if (!skip) {
                a->name = g_strdup(np->attribute[k]->name ? np->attribute[k]->name : "");
                node->n_attrs++;
            }
        }
    }

    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        int v = vi->name ? lookup(L, vi->name) : -1;
        if (v < 0) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                        "graph output '%s' is produced by no node, initializer or graph input",
                        vi->name ? vi->name : "");
            return REEL_EFORMAT;
        }
        reel_ir_value *val = reel_ir_value_at(g, v);
        // The declared type, until shape inference says more.
        if (!val->constant && val->producer >= 0) {
            int rc = apply_value_info(vi, val, "graph output", error);
            if (rc)
                return rc;
        }
        g_array_append_val(g->outputs, v);
    }
    if (g->outputs->len == 0) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "the graph has no outputs");
        return REEL_EFORMAT;
    }
    return topo_sort(g, error);
}

reel_ir_graph *reel_onnx_load(const char *path, GError **error)
{
    guint8 *data = NULL;
    gsize len = 0;
    if (!read_file(path, "model", &data, &len, error))
        return NULL;
    char *dir = g_path_get_dirname(path);
    reel_ir_graph *g = reel_onnx_load_data(data, len, path, dir, error);
    g_free(dir);
    g_free(data);
    return g;
}

reel_ir_graph *reel_onnx_load_data(const void *data, size_t size, const char *name, const char *dir,
                                   GError **error)
{
    const char *path = name ? name : "(memory)";
    if ((uint64_t)size > (uint64_t)MAX_MODEL_BYTES) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "'%s' is %zu bytes, over the limit of %" G_GINT64_FORMAT
                    " bytes (%s)", path, size, (gint64)MAX_MODEL_BYTES, reel_limit_env(REEL_LIMIT_MODEL_BYTES));
        return NULL;
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
    if (!mp || !mp->graph) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "'%s' is not an ONNX model%s", path,
                    mp ? " (it has no graph)" : " (truncated or not a protobuf ModelProto)");
        if (mp)
            onnx__model_proto__free_unpacked(mp, NULL);
        return NULL;
    }
    loader L = {
        .g = reel_ir_graph_new(),
        .by_name = g_hash_table_new(g_str_hash, g_str_equal),
        .budget = { .dir = dir },
    };
    GError *e = NULL;
    int rc = build_graph(&L, mp, &e);
    g_hash_table_destroy(L.by_name);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (rc) {
        if (!e)
            g_set_error(&e, REEL_ERROR, rc, "cannot load the model");
        g_prefix_error(&e, "%s: ", path);
        g_propagate_error(error, e);
        reel_ir_graph_free(&L.g);
        return NULL;
    }
    return L.g;
}
