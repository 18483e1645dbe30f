/* elementwise.c: frontends of the elementwise ops (placeholder until implemented). */
#include "ops.h"
