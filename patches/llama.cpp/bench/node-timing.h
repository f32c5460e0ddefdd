// What the node benchmarks of this folder share: a clock, a comparison for qsort, random values.
#pragma once

#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static float rnd(void) { return rand() / (float) RAND_MAX - 0.5f; }
