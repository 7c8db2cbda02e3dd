// Not compiled. The `layers_catches_wrong_way` test checks this file as if it were one of storage's sources:
// storage may not include the broker (DESIGN.md §1), so tools/check_layers.py must report this line.
#include "broker/partition.h"
