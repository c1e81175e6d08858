/* Compiled register loops of metastore.stats.hll (the numpy code there, HyperLogLog._add_dense and _unpack_registers,
 * is the reference and the fallback; metastore/stats/_hll_native.pyi is the interface). Both release the GIL.
 *
 * add_dense(hashes, p, registers): see below.
 * max_packed_registers(bodies, width, out): for every whole body of len(out) registers of `width` bits (1..8)
 *     packed as Hive packs a dense HyperLogLog (each group of eight registers one big-endian field of `width`
 *     bytes, first register in the most significant bits) that `bodies` holds back to back, out[j] =
 *     max(out[j], register j of that body). `bodies` is any C-contiguous bytes-like object, `out` a writable
 *     C-contiguous buffer of bytes whose length is a positive multiple of 8. ValueError for another width or a
 *     `bodies` that is not whole bodies.
 * pack_registers(registers, width): the inverse for one sketch: bytes of len(registers) / 8 * width, each group
 *     of eight registers one big-endian field of `width` bytes (hll._pack_registers, its reference).
 * read_sparse(buf, pos, count, qprime): a sparse sketch's `count` entries from `pos` (varulongs of 32-bit
 *     deltas, as hll.HyperLogLog.from_bytes decodes them) as a dict key -> value in their order, and the position
 *     after them; None when the entries are malformed (truncated, a varint over 10 bytes) or repeat a key, which
 *     from_bytes then decodes with numpy (its reference, which raises the errors or merges the repeats).
 * write_vulongs(values): unsigned LEB128 of each 8-byte unsigned value, concatenated (hll._write_vulongs).
 * merge_sparse(maps, threshold): sparse maps (dicts key -> value, each in its insertion order) merged as
 *     hll._merge_sparse's numpy code (its reference) merges them: each map's entries taken in Java HashMap
 *     iteration order (stable by bucket (k ^ (k >> 16)) & (capacity - 1), capacity the least power of two from 16
 *     holding the map at a load factor of 3/4), every key in the order of its first appearance with the largest
 *     of its values and 0; None when more than `threshold` keys result (the merge turns dense).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* the loop for one width, inlined with `width` a constant (its shifts unroll): each body is unpacked a block
 * of groups at a time into `tmp`, whose maximum with the registers is then a plain loop over bytes (vectorised).
 * A group's `width` bytes are read as one big-endian 8-byte load where 8 bytes remain before `end`. */
#define BLOCK_GROUPS 256
static inline __attribute__((always_inline)) void max_bodies(const uint8_t *src, const uint8_t *end,
                                                             Py_ssize_t count, Py_ssize_t groups, uint8_t *reg,
                                                             const int width) {
    const uint64_t mask = (width == 8) ? 0xFF : ((1u << width) - 1);
    uint8_t tmp[8 * BLOCK_GROUPS];
    for (Py_ssize_t k = 0; k < count; k++) {
        for (Py_ssize_t g0 = 0; g0 < groups; g0 += BLOCK_GROUPS) {
            Py_ssize_t block = groups - g0 < BLOCK_GROUPS ? groups - g0 : BLOCK_GROUPS;
            for (Py_ssize_t g = 0; g < block; g++, src += width) {
                uint64_t word;
                if (end - src >= 8) {
                    memcpy(&word, src, 8);
                    word = __builtin_bswap64(word) >> (64 - 8 * width);
                } else {
                    word = 0;
                    for (int b = 0; b < width; b++) word = (word << 8) | src[b];
                }
                uint8_t *t = tmp + 8 * g;
                for (int i = 0; i < 8; i++) t[i] = (uint8_t)((word >> (width * (7 - i))) & mask);
            }
            uint8_t *dst = reg + 8 * g0;
            for (Py_ssize_t j = 0; j < 8 * block; j++) dst[j] = tmp[j] > dst[j] ? tmp[j] : dst[j];
        }
    }
}

static PyObject *max_packed_registers(PyObject *self, PyObject *args) {
    PyObject *bodies_obj, *out_obj;
    int width;
    if (!PyArg_ParseTuple(args, "OiO:max_packed_registers", &bodies_obj, &width, &out_obj)) return NULL;
    if (width < 1 || width > 8) {
        PyErr_Format(PyExc_ValueError, "max_packed_registers: width %d is not 1..8", width);
        return NULL;
    }
    Py_buffer bodies = {0}, out = {0};
    if (PyObject_GetBuffer(bodies_obj, &bodies, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&bodies);
        return NULL;
    }
    Py_ssize_t m = out.len;
    Py_ssize_t body_bytes = m / 8 * width;
    if (m <= 0 || m % 8 || bodies.len % body_bytes) {
        PyErr_Format(PyExc_ValueError,
                     "max_packed_registers: %zd bytes are not whole bodies of %zd registers of %d bits", bodies.len,
                     m, width);
        PyBuffer_Release(&bodies);
        PyBuffer_Release(&out);
        return NULL;
    }
    const uint8_t *src = (const uint8_t *)bodies.buf;
    uint8_t *reg = (uint8_t *)out.buf;
    const uint8_t *end = src + bodies.len;
    Py_ssize_t count = bodies.len / body_bytes, groups = m / 8;
    Py_BEGIN_ALLOW_THREADS
    switch (width) {
    case 1: max_bodies(src, end, count, groups, reg, 1); break;
    case 2: max_bodies(src, end, count, groups, reg, 2); break;
    case 3: max_bodies(src, end, count, groups, reg, 3); break;
    case 4: max_bodies(src, end, count, groups, reg, 4); break;
    case 5: max_bodies(src, end, count, groups, reg, 5); break;
    case 6: max_bodies(src, end, count, groups, reg, 6); break;
    case 7: max_bodies(src, end, count, groups, reg, 7); break;
    default: max_bodies(src, end, count, groups, reg, 8); break;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bodies);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* add_dense(hashes, p, registers): Hive's dense add of every 64-bit hash: register h & (2**p - 1) raised to
 * trailing zeros(h >>> p) + 1 (65 when h >>> p is 0). hashes: C-contiguous 8-byte items; registers: writable
 * C-contiguous bytes, 2**p of them. */
static PyObject *add_dense(PyObject *self, PyObject *args) {
    PyObject *hashes_obj, *registers_obj;
    int p;
    if (!PyArg_ParseTuple(args, "OiO:add_dense", &hashes_obj, &p, &registers_obj)) return NULL;
    if (p < 4 || p > 16) {
        PyErr_Format(PyExc_ValueError, "add_dense: p %d is not 4..16", p);
        return NULL;
    }
    Py_buffer hashes = {0}, registers = {0};
    if (PyObject_GetBuffer(hashes_obj, &hashes, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (PyObject_GetBuffer(registers_obj, &registers, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&hashes);
        return NULL;
    }
    if (hashes.len % 8 || registers.len != ((Py_ssize_t)1 << p)) {
        PyErr_Format(PyExc_ValueError, "add_dense: %zd bytes of hashes, %zd registers for p=%d", hashes.len,
                     registers.len, p);
        PyBuffer_Release(&hashes);
        PyBuffer_Release(&registers);
        return NULL;
    }
    const uint64_t *h = (const uint64_t *)hashes.buf;
    uint8_t *reg = (uint8_t *)registers.buf;
    Py_ssize_t n = hashes.len / 8;
    const uint64_t mask = ((uint64_t)1 << p) - 1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t rest = h[i] >> p;
        uint8_t rank = rest ? (uint8_t)(__builtin_ctzll(rest) + 1) : 65;
        uint8_t *r = reg + (h[i] & mask);
        if (rank > *r) *r = rank;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&registers);
    Py_RETURN_NONE;
}

/* pack_registers(registers, width) -> bytes: see the top of the file. */
static PyObject *pack_registers(PyObject *self, PyObject *args) {
    Py_buffer reg = {0};
    int width;
    if (!PyArg_ParseTuple(args, "y*i:pack_registers", &reg, &width)) return NULL;
    if (width < 1 || width > 8 || reg.len % 8) {
        PyErr_Format(PyExc_ValueError, "pack_registers: %zd registers of %d bits", reg.len, width);
        PyBuffer_Release(&reg);
        return NULL;
    }
    Py_ssize_t groups = reg.len / 8;
    PyObject *out = PyBytes_FromStringAndSize(NULL, groups * width);
    if (out == NULL) {
        PyBuffer_Release(&reg);
        return NULL;
    }
    const uint8_t *src = (const uint8_t *)reg.buf;
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t g = 0; g < groups; g++, src += 8, dst += width) {
        uint64_t word = 0;
        for (int i = 0; i < 8; i++) word = (word << width) | src[i];  /* as the numpy reference: no masking */
        word <<= 64 - 8 * width;
        for (int b = 0; b < width; b++) dst[b] = (uint8_t)(word >> (56 - 8 * b));
    }
    PyBuffer_Release(&reg);
    return out;
}

/* read_sparse(buf, pos, count, qprime) -> (dict, end) | None: see the top of the file. */
static PyObject *read_sparse(PyObject *self, PyObject *args) {
    Py_buffer buf = {0};
    Py_ssize_t pos, count;
    int qprime;
    if (!PyArg_ParseTuple(args, "y*nni:read_sparse", &buf, &pos, &count, &qprime)) return NULL;
    const uint8_t *data = (const uint8_t *)buf.buf;
    Py_ssize_t n = buf.len;
    PyObject *entries = NULL, *key = NULL, *value = NULL;
    if (pos < 0 || pos > n || count < 0 || qprime < 0 || qprime > 31) goto fallback;
    entries = PyDict_New();
    if (entries == NULL) goto error;
    uint32_t sum = 0;  /* the running sum in 32-bit arithmetic, as Hive's int delta decoding */
    const uint32_t value_mask = ((uint32_t)1 << qprime) - 1;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t v = 0;
        int shift = 0, length = 0;
        for (;;) {
            if (pos >= n || ++length > 10) goto fallback;
            uint8_t c = data[pos++];
            v |= (uint64_t)(c & 0x7F) << shift;
            if (c < 0x80) break;
            shift += 7;
        }
        sum += (uint32_t)v;
        key = PyLong_FromUnsignedLong((unsigned long)(sum >> qprime));
        value = PyLong_FromUnsignedLong((unsigned long)(sum & value_mask));
        if (key == NULL || value == NULL) goto error;
        int known = PyDict_Contains(entries, key);
        if (known < 0) goto error;
        if (known) goto fallback;  /* a repeated key: not Hive's output, the reference merges it */
        if (PyDict_SetItem(entries, key, value) < 0) goto error;
        Py_CLEAR(key);
        Py_CLEAR(value);
    }
    PyBuffer_Release(&buf);
    PyObject *result = Py_BuildValue("(Nn)", entries, pos);
    return result;
fallback:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(entries);
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
error:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(entries);
    PyBuffer_Release(&buf);
    return NULL;
}

/* write_vulongs(values) -> bytes: see the top of the file. */
static PyObject *write_vulongs(PyObject *self, PyObject *args) {
    Py_buffer values = {0};
    if (!PyArg_ParseTuple(args, "y*:write_vulongs", &values)) return NULL;
    if (values.len % 8) {
        PyErr_Format(PyExc_ValueError, "write_vulongs: %zd bytes are not 8-byte values", values.len);
        PyBuffer_Release(&values);
        return NULL;
    }
    Py_ssize_t count = values.len / 8;
    uint8_t *tmp = PyMem_Malloc(count * 10 + 1);
    if (tmp == NULL) {
        PyBuffer_Release(&values);
        return PyErr_NoMemory();
    }
    const uint8_t *src = (const uint8_t *)values.buf;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t v;
        memcpy(&v, src + 8 * i, 8);
        while (v >= 0x80) {
            tmp[at++] = (uint8_t)((v & 0x7F) | 0x80);
            v >>= 7;
        }
        tmp[at++] = (uint8_t)v;
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)tmp, at);
    PyMem_Free(tmp);
    PyBuffer_Release(&values);
    return out;
}

/* merge_sparse(maps, threshold) -> dict | None: see the top of the file. */
static PyObject *merge_sparse(PyObject *self, PyObject *args) {
    PyObject *maps;
    Py_ssize_t threshold;
    if (!PyArg_ParseTuple(args, "O!n:merge_sparse", &PyList_Type, &maps, &threshold)) return NULL;
    PyObject *result = PyDict_New();
    if (result == NULL) return NULL;
    Py_ssize_t cap_alloc = 0;
    PyObject **keys = NULL, **values = NULL;
    Py_ssize_t *bucket = NULL, *order = NULL, *counts = NULL;
    for (Py_ssize_t m = 0; m < PyList_GET_SIZE(maps); m++) {
        PyObject *map = PyList_GET_ITEM(maps, m);
        if (!PyDict_Check(map)) {
            PyErr_SetString(PyExc_TypeError, "merge_sparse: the maps must be dicts");
            goto error;
        }
        Py_ssize_t n = PyDict_GET_SIZE(map);
        if (n == 0) continue;
        Py_ssize_t capacity = 16;
        while (n > capacity * 3 / 4) capacity *= 2;
        if (n > cap_alloc || capacity > cap_alloc) {
            Py_ssize_t size = n > capacity ? n : capacity;
            PyMem_Free(keys); PyMem_Free(values); PyMem_Free(bucket); PyMem_Free(order); PyMem_Free(counts);
            keys = PyMem_Malloc(size * sizeof(PyObject *));
            values = PyMem_Malloc(size * sizeof(PyObject *));
            bucket = PyMem_Malloc(size * sizeof(Py_ssize_t));
            order = PyMem_Malloc(size * sizeof(Py_ssize_t));
            counts = PyMem_Malloc((size + 1) * sizeof(Py_ssize_t));
            cap_alloc = size;
            if (!keys || !values || !bucket || !order || !counts) {
                PyErr_NoMemory();
                goto error;
            }
        }
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *v;
        while (PyDict_Next(map, &pos, &k, &v)) {
            long long key = PyLong_AsLongLong(k);
            if (key == -1 && PyErr_Occurred()) goto error;
            keys[i] = k;
            values[i] = v;
            bucket[i] = (Py_ssize_t)((key ^ (key >> 16)) & (long long)(capacity - 1));
            i++;
        }
        /* a stable counting sort by bucket: Java's iteration order */
        memset(counts, 0, (capacity + 1) * sizeof(Py_ssize_t));
        for (i = 0; i < n; i++) counts[bucket[i] + 1]++;
        for (Py_ssize_t b = 0; b < capacity; b++) counts[b + 1] += counts[b];
        for (i = 0; i < n; i++) order[counts[bucket[i]]++] = i;
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *key = keys[order[j]];
            long long value = PyLong_AsLongLong(values[order[j]]);
            if (value == -1 && PyErr_Occurred()) goto error;
            PyObject *held = PyDict_GetItemWithError(result, key);
            long long best = 0;
            if (held != NULL) {
                best = PyLong_AsLongLong(held);
                if (best == -1 && PyErr_Occurred()) goto error;
            } else if (PyErr_Occurred()) {
                goto error;
            }
            if (held == NULL || value > best) {
                PyObject *now = PyLong_FromLongLong(value > best ? value : best);
                if (now == NULL) goto error;
                int failed = PyDict_SetItem(result, key, now);
                Py_DECREF(now);
                if (failed < 0) goto error;
            }
        }
    }
    PyMem_Free(keys); PyMem_Free(values); PyMem_Free(bucket); PyMem_Free(order); PyMem_Free(counts);
    if (PyDict_GET_SIZE(result) > threshold) {
        Py_DECREF(result);
        Py_RETURN_NONE;
    }
    return result;
error:
    PyMem_Free(keys); PyMem_Free(values); PyMem_Free(bucket); PyMem_Free(order); PyMem_Free(counts);
    Py_DECREF(result);
    return NULL;
}

static PyMethodDef methods[] = {
    {"add_dense", add_dense, METH_VARARGS,
     "add_dense(hashes, p, registers): Hive's dense HyperLogLog add of every 64-bit hash."},
    {"max_packed_registers", max_packed_registers, METH_VARARGS,
     "max_packed_registers(bodies, width, out): out[j] = max(out[j], register j of each packed dense body)."},
    {"pack_registers", pack_registers, METH_VARARGS,
     "pack_registers(registers, width): the registers bit-packed as Hive packs a dense HyperLogLog."},
    {"read_sparse", read_sparse, METH_VARARGS,
     "read_sparse(buf, pos, count, qprime): a sparse HyperLogLog's entries as a dict and the end, or None."},
    {"merge_sparse", merge_sparse, METH_VARARGS,
     "merge_sparse(maps, threshold): sparse HyperLogLog maps merged in Java order, or None when it turns dense."},
    {"write_vulongs", write_vulongs, METH_VARARGS,
     "write_vulongs(values): unsigned LEB128 of each 8-byte unsigned value, concatenated."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "metastore.stats._hll_native",
    "Compiled HyperLogLog register loop (numpy reference in hll.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__hll_native(void) { return PyModule_Create(&module); }
