// One MUL_MAT node as llama.cpp's graph asks the CPU backend for it: an m x k weight of a
// quantized type (random blocks; `copies` such weights, one node each, so that their reads come
// from memory as a model's layers do) times n F32 rows. Prints a hash of the last node's output
// (for comparing builds bit for bit), and the median and best microseconds per graph over reps.
//
//   mm-node TYPE k m n threads reps [copies]      TYPE: q8_0 q5_0 q4_0 q4_k q6_k
//   mm-node q8_0 640 262144 4 2 15                # Gemma 3 270M's output matrix, four tokens
#include "ggml-cpu.h"
#include "ggml.h"
#include "node-timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char ** argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s TYPE k m n threads reps [copies]\n", argv[0]);
        return 2;
    }
    static const struct { const char * name; enum ggml_type type; } types[] = {
        { "q8_0", GGML_TYPE_Q8_0 }, { "q5_0", GGML_TYPE_Q5_0 }, { "q4_0", GGML_TYPE_Q4_0 },
        { "q4_k", GGML_TYPE_Q4_K }, { "q6_k", GGML_TYPE_Q6_K },
    };
    int t_i = -1;
    for (int i = 0; i < (int) (sizeof(types) / sizeof(types[0])); i++) {
        if (strcmp(argv[1], types[i].name) == 0) {
            t_i = i;
        }
    }
    if (t_i < 0) {
        fprintf(stderr, "unknown type %s\n", argv[1]);
        return 2;
    }
    const enum ggml_type T = types[t_i].type;
    const int k = atoi(argv[2]), m = atoi(argv[3]), n = atoi(argv[4]), nth = atoi(argv[5]), reps = atoi(argv[6]);
    const int copies = argc > 7 ? atoi(argv[7]) : 1;
    const size_t rs = ggml_row_size(T, k);

    struct ggml_init_params ip = { (size_t) copies * (rs * m + (size_t) m * n * 4 + 4096) + (size_t) k * n * 4 + (64u << 20), NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    struct ggml_tensor * out = NULL;
    srand(1);
    for (long i = 0; i < (long) k * n; i++) {
        ((float *) x->data)[i] = rnd();
    }
    float * row = malloc(sizeof(float) * k);
    for (int c = 0; c < copies; c++) {
        struct ggml_tensor * w = ggml_new_tensor_2d(ctx, T, k, m);
        for (int r = 0; r < m; r++) {
            if (r < 97) {  // 97 random rows, then copies of them: quick to make, never aligned to a tile
                for (int i = 0; i < k; i++) {
                    row[i] = rnd();
                }
                ggml_quantize_chunk(T, row, (char *) w->data + r * rs, 0, 1, k, NULL);
            } else {
                memcpy((char *) w->data + r * rs, (char *) w->data + (r % 97) * rs, rs);
            }
        }
        out = ggml_mul_mat(ctx, w, x);
        ggml_build_forward_expand(gf, out);
    }

    double * t = malloc(sizeof(double) * reps);
    ggml_graph_compute_with_ctx(ctx, gf, nth);  // warm-up
    for (int r = 0; r < reps; r++) {
        const double t0 = now_us();
        ggml_graph_compute_with_ctx(ctx, gf, nth);
        t[r] = now_us() - t0;
    }
    qsort(t, reps, sizeof(double), cmp);
    unsigned long long h = 1469598103934665603ull;  // FNV-1a of the output's bytes
    for (size_t i = 0; i < ggml_nbytes(out); i++) {
        h = (h ^ ((const unsigned char *) out->data)[i]) * 1099511628211ull;
    }
    printf("%s k=%d m=%d n=%d threads=%d copies=%d: out %016llx median %.1f best %.1f us\n",
           argv[1], k, m, n, nth, copies, h, t[reps / 2], t[0]);
    ggml_free(ctx);
    return 0;
}
