// Must compile: families/ is above model/. The control for
// layers.upward_include_fails, which would otherwise pass on any broken build.
#include "model/model.h"
