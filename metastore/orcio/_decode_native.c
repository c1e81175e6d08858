/* Compiled integer decoding loops for metastore.orcio (the numpy code in _rle.py is the reference and the fallback;
 * metastore/orcio/_decode_native.pyi is the interface). Both release the GIL.
 *
 * varints(data, pos, count, zigzag, max_bytes, out) -> end
 *     out[i] = the i-th varint from data[pos:] (7 bits a byte, low group first, bits past 64 dropped as a Java long
 *     drops them; zigzag-decoded when zigzag is true). Returns the offset after the last one, or -1 when a varint
 *     is longer than max_bytes or the data ends first: the caller then runs the numpy code, which says why.
 * rle_v2(data, pos, count, signed, out) -> end
 *     ORC integer RLE v2 runs from data[pos:] until count values are produced, the first count of them into out
 *     (int64, at least count items); returns the offset after the last run read, or -1 for anything the numpy
 *     decoder must handle (a truncated or malformed run, a patched-base run whose patches do not move forward):
 *     the caller then runs decode_int_rle_v2's numpy code, which decodes or raises as before.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const int WIDTH_FROM_CODE[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                        17, 18, 19, 20, 21, 22, 23, 24, 26, 28, 30, 32, 40, 48, 56, 64};

static int closest_fixed_bits(int n) {
    if (n == 0) return 1;
    if (n <= 24) return n;
    if (n <= 26) return 26;
    if (n <= 28) return 28;
    if (n <= 30) return 30;
    if (n <= 32) return 32;
    if (n <= 40) return 40;
    if (n <= 48) return 48;
    if (n <= 56) return 56;
    return 64;
}

static inline uint64_t unzigzag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

/* one varint at *p (< end) of at most max_bytes bytes; 0 when it is longer or runs past end */
static inline int read_varint(const uint8_t *data, Py_ssize_t n, Py_ssize_t *p, int max_bytes, uint64_t *value) {
    uint64_t v = 0;
    Py_ssize_t i = *p;
    for (int k = 0; k < max_bytes; k++, i++) {
        if (i >= n) return 0;
        uint8_t b = data[i];
        if (7 * k < 64) v |= (uint64_t)(b & 0x7F) << (7 * k);
        if (b < 0x80) {
            *p = i + 1;
            *value = v;
            return 1;
        }
    }
    return 0;
}

/* count values of width bits, big-endian bit order, from the byte at start (all within [start, n)) */
static void unpack_be(const uint8_t *data, Py_ssize_t start, Py_ssize_t count, int width, uint64_t *out) {
    if (width == 8) {
        for (Py_ssize_t i = 0; i < count; i++) out[i] = data[start + i];
        return;
    }
    if (width % 8 == 0) {
        int bytes = width / 8;
        const uint8_t *q = data + start;
        for (Py_ssize_t i = 0; i < count; i++) {
            uint64_t v = 0;
            for (int b = 0; b < bytes; b++) v = (v << 8) | *q++;
            out[i] = v;
        }
        return;
    }
    uint64_t acc = 0; /* bits not consumed yet, right-aligned */
    int have = 0;
    const uint8_t *q = data + start;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t v = 0;
        int need = width;
        while (need > 0) {
            if (have == 0) {
                acc = *q++;
                have = 8;
            }
            int take = need < have ? need : have;
            v = (take == 64 ? 0 : v << take) | ((acc >> (have - take)) & ((1u << take) - 1));
            have -= take;
            need -= take;
        }
        out[i] = v;
    }
}

static Py_ssize_t decode_v2(const uint8_t *data, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t count, int is_signed,
                            uint64_t *out) {
    Py_ssize_t produced = 0;
    uint64_t scratch[512];
    uint64_t entries[32];
    while (produced < count) {
        if (pos >= n) return -1;
        uint8_t first = data[pos];
        int encoding = first >> 6;
        Py_ssize_t room = count - produced; /* values of a run past count are decoded and dropped */
        if (encoding == 0) { /* SHORT_REPEAT */
            int width = ((first >> 3) & 7) + 1;
            int length = (first & 7) + 3;
            if (pos + 1 + width > n) return -1;
            uint64_t value = 0;
            for (int b = 0; b < width; b++) value = (value << 8) | data[pos + 1 + b];
            if (is_signed) value = unzigzag(value);
            Py_ssize_t k = length < room ? length : room;
            for (Py_ssize_t i = 0; i < k; i++) out[produced + i] = value;
            produced += length;
            pos += 1 + width;
            continue;
        }
        if (pos + 2 > n) return -1;
        int length = (((first & 1) << 8) | data[pos + 1]) + 1;
        int code = (first >> 1) & 0x1F;
        Py_ssize_t k = length < room ? length : room;
        if (encoding == 1) { /* DIRECT */
            int width = WIDTH_FROM_CODE[code];
            Py_ssize_t end = pos + 2 + (((Py_ssize_t)width * length + 7) >> 3);
            if (end > n) return -1;
            unpack_be(data, pos + 2, length, width, scratch);
            for (Py_ssize_t i = 0; i < k; i++) out[produced + i] = is_signed ? unzigzag(scratch[i]) : scratch[i];
            pos = end;
        } else if (encoding == 2) { /* PATCHED_BASE */
            int width = WIDTH_FROM_CODE[code];
            if (pos + 4 > n) return -1;
            uint8_t third = data[pos + 2], fourth = data[pos + 3];
            int base_width = ((third >> 5) & 7) + 1;
            int patch_width = WIDTH_FROM_CODE[third & 0x1F];
            int gap_width = ((fourth >> 5) & 7) + 1;
            int patch_count = fourth & 0x1F;
            if (patch_width + gap_width > 64) return -1;
            Py_ssize_t p = pos + 4;
            if (p + base_width > n) return -1;
            uint64_t raw = 0;
            for (int b = 0; b < base_width; b++) raw = (raw << 8) | data[p + b];
            uint64_t sign_bit = (uint64_t)1 << (base_width * 8 - 1);
            uint64_t base = (raw & sign_bit) ? (0 - (raw & ~sign_bit)) : raw;
            p += base_width;
            Py_ssize_t values_end = p + (((Py_ssize_t)width * length + 7) >> 3);
            int entry_width = closest_fixed_bits(patch_width + gap_width);
            Py_ssize_t end = values_end + (((Py_ssize_t)entry_width * patch_count + 7) >> 3);
            if (end > n) return -1;
            unpack_be(data, p, length, width, scratch);
            if (patch_count) {
                /* entries continue at the bit after the values (values_end is byte-aligned there) */
                unpack_be(data, values_end, patch_count, entry_width, entries);
                uint64_t patch_mask = patch_width >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << patch_width) - 1);
                Py_ssize_t last = -1, skipped = 0;
                for (int e = 0; e < patch_count; e++) {
                    uint64_t gap = patch_width >= 64 ? 0 : entries[e] >> patch_width;
                    uint64_t patch = entries[e] & patch_mask;
                    if (gap == 255 && patch == 0) {
                        skipped += 255;
                        continue;
                    }
                    Py_ssize_t target = (last > 0 ? last : 0) + skipped + (Py_ssize_t)gap;
                    skipped = 0;
                    if ((last >= 0 && target == last) || target >= length) break;
                    scratch[target] |= width >= 64 ? 0 : patch << width;
                    last = target;
                }
            }
            for (Py_ssize_t i = 0; i < k; i++) out[produced + i] = scratch[i] + base;
            pos = end;
        } else { /* DELTA */
            int width = code == 0 ? 0 : WIDTH_FROM_CODE[code];
            Py_ssize_t p = pos + 2;
            uint64_t base, delta;
            if (!read_varint(data, n, &p, 10, &base)) return -1;
            if (!read_varint(data, n, &p, 10, &delta)) return -1;
            if (is_signed) base = unzigzag(base);
            delta = unzigzag(delta);
            Py_ssize_t end = p;
            if (width) {
                Py_ssize_t packed = length > 2 ? length - 2 : 0;
                end = p + (((Py_ssize_t)width * packed + 7) >> 3);
                if (end > n) return -1;
            }
            if (width == 0 || length <= 2) {
                uint64_t v = base;
                for (Py_ssize_t i = 0; i < k; i++, v += delta) out[produced + i] = v;
            } else {
                unpack_be(data, p, length - 2, width, scratch);
                uint64_t v = base;
                if (k > 0) out[produced] = v;
                v += delta;
                if (k > 1) out[produced + 1] = v;
                int down = (int64_t)delta < 0;
                for (Py_ssize_t i = 2; i < k; i++) {
                    v = down ? v - scratch[i - 2] : v + scratch[i - 2];
                    out[produced + i] = v;
                }
            }
            pos = end;
        }
        produced += length;
    }
    return pos;
}

static int get_out(PyObject *obj, Py_buffer *view, Py_ssize_t count, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != 8 || view->len / 8 < count) {
        PyErr_Format(PyExc_ValueError, "%s: out must hold %zd items of 8 bytes", name, count);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *varints(PyObject *self, PyObject *args) {
    PyObject *data_obj, *out_obj;
    Py_ssize_t pos, count;
    int zigzag, max_bytes;
    if (!PyArg_ParseTuple(args, "OnnpiO:varints", &data_obj, &pos, &count, &zigzag, &max_bytes, &out_obj))
        return NULL;
    if (pos < 0 || count < 0 || max_bytes < 1 || max_bytes > 10) {
        PyErr_SetString(PyExc_ValueError, "varints: negative pos or count, or max_bytes outside 1..10");
        return NULL;
    }
    Py_buffer data = {0}, out = {0};
    if (PyObject_GetBuffer(data_obj, &data, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (get_out(out_obj, &out, count, "varints") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const uint8_t *bytes = (const uint8_t *)data.buf;
    Py_ssize_t n = data.len;
    uint64_t *values = (uint64_t *)out.buf;
    Py_ssize_t p = pos;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t v;
        if (!read_varint(bytes, n, &p, max_bytes, &v)) {
            ok = 0;
            break;
        }
        values[i] = zigzag ? unzigzag(v) : v;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(ok ? p : -1);
}

static PyObject *rle_v2(PyObject *self, PyObject *args) {
    PyObject *data_obj, *out_obj;
    Py_ssize_t pos, count;
    int is_signed;
    if (!PyArg_ParseTuple(args, "OnnpO:rle_v2", &data_obj, &pos, &count, &is_signed, &out_obj)) return NULL;
    if (pos < 0 || count < 0) {
        PyErr_SetString(PyExc_ValueError, "rle_v2: negative pos or count");
        return NULL;
    }
    Py_buffer data = {0}, out = {0};
    if (PyObject_GetBuffer(data_obj, &data, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (get_out(out_obj, &out, count, "rle_v2") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    Py_ssize_t end;
    Py_BEGIN_ALLOW_THREADS
    end = decode_v2((const uint8_t *)data.buf, data.len, pos, count, is_signed, (uint64_t *)out.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&out);
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(end);
}

static PyMethodDef methods[] = {
    {"varints", varints, METH_VARARGS, "Decode count varints (see the module source); the end offset or -1."},
    {"rle_v2", rle_v2, METH_VARARGS, "Decode count integers of RLE v2 (see the module source); the end or -1."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_decode_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__decode_native(void) { return PyModule_Create(&module); }
