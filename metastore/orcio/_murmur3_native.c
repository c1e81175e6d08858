/* Compiled Murmur3 hash64 loops for metastore.orcio (the numpy code in _murmur3.py and _murmur3_packed.py is the
 * reference and the fallback; metastore/orcio/_murmur3_native.pyi is the interface). Both release the GIL.
 *
 * hash64_packed(buffer, offsets, seed, out): out[i] = hash64(buffer[offsets[i]:offsets[i+1]], seed) for the
 *     len(offsets) - 1 values; buffer is any C-contiguous bytes-like object, offsets and out C-contiguous int64.
 *     Raises ValueError as hash64_packed does for offsets outside the buffer or decreasing.
 * hash64_longs(values, out): out[i] = Hive's hash64(long) of values[i] (int64 in, int64 out).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_murmur3.h"

/* a C-contiguous buffer of 8-byte items; writable when asked */
static int get_int64s(PyObject *obj, Py_buffer *view, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (writable) flags |= PyBUF_WRITABLE;
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != 8 || view->len % 8) {
        PyErr_Format(PyExc_ValueError, "%s: expected items of 8 bytes, got %zd", name, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *hash64_packed(PyObject *self, PyObject *args) {
    PyObject *buffer_obj, *offsets_obj, *out_obj;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OOKO:hash64_packed", &buffer_obj, &offsets_obj, &seed, &out_obj)) return NULL;
    Py_buffer buffer = {0}, offsets = {0}, out = {0};
    PyObject *result = NULL;
    if (PyObject_GetBuffer(buffer_obj, &buffer, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (get_int64s(offsets_obj, &offsets, 0, "hash64_packed offsets") < 0) goto release_buffer;
    if (get_int64s(out_obj, &out, 1, "hash64_packed out") < 0) goto release_offsets;
    Py_ssize_t n = offsets.len / 8 - 1;
    if (n <= 0) goto ok;
    if (out.len / 8 != n) {
        PyErr_Format(PyExc_ValueError, "hash64_packed: out holds %zd values, not %zd", out.len / 8, n);
        goto release_out;
    }
    const int64_t *off = (const int64_t *)offsets.buf;
    if (off[n] > (int64_t)buffer.len || off[0] < 0) {
        PyErr_Format(PyExc_ValueError, "offsets reach byte %lld of a %zd-byte buffer", (long long)off[n],
                     buffer.len);
        goto release_out;
    }
    int decreasing = 0;
    const uint8_t *data = (const uint8_t *)buffer.buf;
    int64_t *hashes = (int64_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i + 1] < off[i]) {
            decreasing = 1;
            break;
        }
    }
    if (!decreasing) {
        for (Py_ssize_t i = 0; i < n; i++)
            hashes[i] = (int64_t)hash64_bytes(data + off[i], (uint64_t)(off[i + 1] - off[i]), (uint64_t)seed);
    }
    Py_END_ALLOW_THREADS
    if (decreasing) {
        PyErr_SetString(PyExc_ValueError, "offsets must not decrease");
        goto release_out;
    }
ok:
    Py_INCREF(Py_None);
    result = Py_None;
release_out:
    PyBuffer_Release(&out);
release_offsets:
    PyBuffer_Release(&offsets);
release_buffer:
    PyBuffer_Release(&buffer);
    return result;
}

static PyObject *hash64_longs(PyObject *self, PyObject *args) {
    PyObject *values_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OO:hash64_longs", &values_obj, &out_obj)) return NULL;
    Py_buffer values, out;
    if (get_int64s(values_obj, &values, 0, "hash64_longs values") < 0) return NULL;
    if (get_int64s(out_obj, &out, 1, "hash64_longs out") < 0) {
        PyBuffer_Release(&values);
        return NULL;
    }
    if (out.len != values.len) {
        PyBuffer_Release(&values);
        PyBuffer_Release(&out);
        PyErr_Format(PyExc_ValueError, "hash64_longs: out holds %zd values, not %zd", out.len / 8, values.len / 8);
        return NULL;
    }
    Py_ssize_t n = values.len / 8;
    const uint64_t *in = (const uint64_t *)values.buf;
    uint64_t *hashes = (uint64_t *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) hashes[i] = hash64_long(in[i]);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&values);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"hash64_packed", hash64_packed, METH_VARARGS,
     "hash64_packed(buffer, offsets, seed, out): Murmur3 hash64 of every value buffer[offsets[i]:offsets[i+1]]."},
    {"hash64_longs", hash64_longs, METH_VARARGS,
     "hash64_longs(values, out): Hive's Murmur3 hash64(long) of every int64 value."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "metastore.orcio._murmur3_native",
    "Compiled Murmur3 hash64 loops (numpy references in _murmur3.py and _murmur3_packed.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__murmur3_native(void) { return PyModule_Create(&module); }
