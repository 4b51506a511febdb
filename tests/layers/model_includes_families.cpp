// Must not compile: model/ is below families/, so families' headers are not
// on its include path (CMakeLists.txt, "Layers"). Built only by the test
// layers.upward_include_fails.
#include "families/family.h"
