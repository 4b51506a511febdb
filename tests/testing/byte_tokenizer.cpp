#include "testing/byte_tokenizer.h"

namespace fsvd::testing {

std::vector<int32_t> ByteTokenizer::encode(std::string_view text, bool add_bos, bool) const {
  std::vector<int32_t> ids;
  if (add_bos) ids.push_back(bos_id());
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (int32_t id : ids)
    if (id >= 0 && id < 256) s += static_cast<char>(id);
  return s;
}

std::string ByteTokenizer::chat_template() const {
  return "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
         "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

}  // namespace fsvd::testing
