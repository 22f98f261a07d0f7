"""A varied corpus for comparing the budgets' token estimate with real tokenizers: texts by kind
(English prose, code, JSON, markdown, CJK, other scripts, emoji, base64, hex and ids, long numbers,
random keys, URLs), written here or generated with a fixed seed, plus pages and sources of this
repository (prose and code as the project writes them). The same corpus on every run."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ENGLISH = [
    "The budget of a plugin is what its calls to the model may spend in a day and in a month. When a call "
    "would take the plugin past its cap, the call is refused before its request leaves the host, and the "
    "refusal says which holder was at its limit, how much of it was used, and when the window resets.",
    "She walked along the harbour in the early morning, when the fishing boats were coming back and the gulls "
    "followed them in long, noisy circles. Nobody else was awake yet; the cafes had their chairs stacked on the "
    "tables, and the only sound besides the birds was the slow knocking of hulls against the pier.",
    "Reservations that are never settled would pin a budget for good, so each one carries a lease. A host that "
    "is killed in the middle of a call leaves its reservation behind; once the lease runs out, the reservation "
    "is released and the budget it held is available again to every other host of the fleet.",
    "I'm not sure we'll make it before the shops close, but let's try anyway: it's only ten minutes if the "
    "traffic isn't bad, and they've usually got a few loaves left at the end of the day.",
    "Photosynthesis converts light energy into chemical energy, which is stored in the bonds of glucose "
    "molecules. The process takes place mainly in the chloroplasts of leaf cells, where chlorophyll absorbs "
    "red and blue wavelengths and reflects green, giving plants their characteristic colour.",
]

CODE = [
    '''def worst_case(messages, tools, max_tokens, pricing, model):
    """What a call reserves: its prompt's tokens plus its answer's, and their price."""
    prompt = prompt_tokens(messages, tools)
    answer = answer_tokens(messages, max_tokens)
    price = _price(pricing, model) if pricing else None
    cost = _priced(price, prompt, answer, 0, 0) if price is not None else None
    return prompt + answer, (cost or 0.0) if price is not None else None
''',
    '''export async function fetchUser(id: string): Promise<User | null> {
  const response = await fetch(`/api/users/${encodeURIComponent(id)}`, {
    headers: { Accept: "application/json", Authorization: `Bearer ${token}` },
  });
  if (!response.ok) {
    if (response.status === 404) return null;
    throw new Error(`GET /api/users/${id} failed: ${response.status} ${response.statusText}`);
  }
  return (await response.json()) as User;
}
''',
    '''#!/usr/bin/env bash
set -euo pipefail
for file in "$@"; do
  if [[ -f "$file" ]]; then
    sha256sum "$file" | awk '{print $1}' >> checksums.txt
  else
    echo "skipping $file: not a regular file" >&2
  fi
done
''',
    '''SELECT who, period, SUM(tokens) AS tokens, SUM(cost) AS cost, COUNT(*) AS requests
FROM budget_calls
WHERE who = $1 AND started > now() - interval '1 day' AND expires IS NULL
GROUP BY who, period
ORDER BY period DESC
LIMIT 30;
''',
    '''#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long total = 0;
    for (int i = 1; i < argc; i++) {
        total += strtol(argv[i], NULL, 10);
    }
    printf("%ld\\n", total);
    return EXIT_SUCCESS;
}
''',
]

CHINESE = [
    "预算决定了每个插件每天和每月可以在模型调用上花费多少。当一次调用会让插件超出上限时，请求在离开主机之前就会被拒绝，"
    "拒绝的消息会说明是哪一个持有者达到了上限、已经用了多少，以及额度在什么时候重置。",
    "清晨的港口很安静，渔船陆续回来，海鸥在船后面绕着圈飞。咖啡馆还没有开门，椅子都倒扣在桌子上，"
    "只有船身轻轻撞着码头的声音。她沿着海边慢慢地走，想着昨天晚上收到的那封信。",
    "光合作用把光能转化为化学能，储存在葡萄糖分子的化学键中。这个过程主要发生在叶肉细胞的叶绿体里，"
    "叶绿素吸收红光和蓝光，反射绿光，所以植物看起来是绿色的。",
    "龘靐齉爩鱻麤灪籱饢驫厵纞虋龗鬱鸞钃鑾灩鬻",  # rare characters: several tokens each in most vocabularies
]

JAPANESE = [
    "予算は、各プラグインが一日と一か月にモデルの呼び出しで使える量を決めます。呼び出しによって上限を超える場合、"
    "リクエストはホストを出る前に拒否され、どの保有者が上限に達したのか、どれだけ使ったのか、いつリセットされるのかが示されます。",
    "朝早くの港は静かで、漁船が次々と戻ってきて、カモメがその後ろを騒がしく回っていた。カフェはまだ開いておらず、"
    "椅子はテーブルの上に逆さに置かれていた。",
]

KOREAN = [
    "예산은 각 플러그인이 하루와 한 달 동안 모델 호출에 쓸 수 있는 양을 정합니다. 호출이 한도를 넘게 되면 요청은 "
    "호스트를 떠나기 전에 거부되고, 어느 보유자가 한도에 도달했는지와 언제 초기화되는지를 알려 줍니다.",
]

OTHER_SCRIPTS = [
    "Бюджет плагина — это то, сколько его вызовы модели могут потратить за день и за месяц. Если вызов превысит "
    "лимит, запрос отклоняется ещё до того, как покинет хост, и в отказе сказано, когда лимит будет сброшен.",
    "Ο προϋπολογισμός ενός πρόσθετου είναι το ποσό που μπορούν να ξοδέψουν οι κλήσεις του στο μοντέλο σε μια ημέρα "
    "και σε έναν μήνα.",
    "ميزانية الإضافة هي ما يمكن أن تنفقه استدعاءاتها للنموذج في اليوم وفي الشهر. إذا تجاوز الاستدعاء الحد، يُرفض "
    "الطلب قبل أن يغادر المضيف.",
    "किसी प्लगइन का बजट यह है कि उसकी मॉडल कॉल एक दिन और एक महीने में कितना खर्च कर सकती हैं। अगर कोई कॉल सीमा "
    "से आगे जाएगी, तो अनुरोध होस्ट से निकलने से पहले ही अस्वीकार कर दिया जाता है।",
    "งบประมาณของปลั๊กอินคือจำนวนที่การเรียกโมเดลของมันใช้ได้ในหนึ่งวันและหนึ่งเดือน",
]

EUROPEAN = [
    "Le budget d'un module correspond à ce que ses appels au modèle peuvent dépenser en un jour et en un mois. "
    "Lorsqu'un appel dépasserait le plafond, la requête est refusée avant même de quitter l'hôte.",
    "Das Budget eines Plugins legt fest, wie viel seine Aufrufe des Modells an einem Tag und in einem Monat "
    "ausgeben dürfen. Würde ein Aufruf die Obergrenze überschreiten, wird die Anfrage abgelehnt, bevor sie den "
    "Host verlässt; die Ablehnung nennt den Zeitpunkt, zu dem das Kontingent zurückgesetzt wird.",
    "El presupuesto de un complemento es lo que sus llamadas al modelo pueden gastar en un día y en un mes; "
    "¿qué pasa si una llamada lo supera? Se rechaza antes de salir del anfitrión.",
]

EMOJI = [
    "Deployed 🚀 all green ✅ — thanks team 🙏🎉 see you tomorrow 👋",
    "😀😃😄😁😆😅🤣😂🙂🙃😉😊😇🥰😍🤩😘😗☺😚😙🥲😋😛😜🤪😝🤑🤗🤭🤫🤔",
    "👨‍👩‍👧‍👦👩‍❤️‍👨🏳️‍🌈🧑🏽‍💻👩🏿‍🚀🇫🇷🇯🇵🇧🇷🇰🇪👍🏻👍🏼👍🏽👍🏾👍🏿",
    "status: ✅ done | ⚠️ warning | ❌ failed | ⏳ pending | 🔒 locked | 📦 packaged | 🐛 bug | ✨ feature",
]


def generated(seed: int = 55) -> dict[str, list[str]]:
    """The generated kinds: base64, hex and ids, long numbers, random keys, URLs."""
    rng = random.Random(seed)
    blobs = [bytes(rng.getrandbits(8) for _ in range(size)) for size in (48, 300, 1500, 3000)]
    b64 = [base64.b64encode(blob).decode() for blob in blobs]
    b64 += [base64.urlsafe_b64encode(blob).decode().rstrip("=") for blob in blobs[:2]]
    b64.append(base64.b64encode(ENGLISH[1].encode()).decode())  # text, base64-encoded
    b64.append("\n".join(base64.b64encode(blobs[2]).decode()[i:i + 76] for i in range(0, 2000, 76)))  # PEM-like
    hexes = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(8)]
    ids = [" ".join(str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(6)),
           " ".join(hexes), "".join(hexes[:4]),
           "commit " + hashlib.sha1(b"hermes").hexdigest() + " parent " + hashlib.sha1(b"core").hexdigest()]
    numbers = ["".join(rng.choice("0123456789") for _ in range(size)) for size in (20, 200, 1000)]
    numbers += [", ".join(f"{rng.uniform(-1000, 1000):.6f}" for _ in range(60)),
                "\n".join(",".join(str(rng.randint(0, 99999)) for _ in range(8)) for _ in range(20)),
                " ".join(f"{rng.randint(1, 10**9):,}" for _ in range(40)),
                "+1 (415) 555-0134, +44 20 7946 0958, +81 3-1234-5678, +49 30 901820"]
    printable = "".join(chr(code) for code in range(33, 127))
    keys = ["".join(rng.choice(printable) for _ in range(size)) for size in (32, 64, 400)]
    keys += ["sk-" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(48)),
             "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(300))]
    # no natural text looks like this: words of random consonants, the estimate's known weak spot
    salad = [" ".join("".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(rng.randint(3, 9))) for _ in range(60))]
    urls = ["https://example.com/api/v2/projects/8841/builds?status=failed&branch=feature%2Fbudgets&page=3&per_page=50",
            " ".join(f"https://cdn.example.net/assets/{hashlib.md5(str(i).encode()).hexdigest()}/image-{i}.png"
                     for i in range(10)),
            "/home/user/projects/hermes-core/hermes_core/_llm/counters.py:184: in _reserving\n"
            "/usr/lib/python3.11/asyncio/base_events.py:653: in run_until_complete"]
    return {"base64": b64, "hex and ids": ids, "numbers": numbers, "random keys": keys, "urls and paths": urls,
            "random consonant words (adversarial)": salad}


def _prose(path: Path) -> list[str]:
    """The paragraphs of a markdown page that are prose (no code, tables, headings or lists)."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [" ".join(block.split()) for block in text.split("\n\n")
            if block.strip() and not block.lstrip().startswith(("#", "|", "-", "*", ">", "    ", "1."))
            and len(block) > 200]


def _json_texts() -> list[str]:
    tool = {"type": "function", "function": {
        "name": "search_tickets", "description": "Search the ticket tracker by text, status and assignee.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Words to look for in titles and bodies"},
            "status": {"type": "string", "enum": ["open", "closed", "pending"]},
            "assignee": {"type": ["string", "null"]}, "limit": {"type": "integer", "minimum": 1, "maximum": 100}},
            "required": ["query"]}}}
    answer = {"id": "chatcmpl-8f3a1c", "object": "chat.completion", "created": 1764400000, "model": "gpt-4o-mini",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "call_Qm3x", "type": "function", "function": {
                      "name": "search_tickets", "arguments": json.dumps({"query": "login fails", "limit": 5})}}]},
                  "finish_reason": "tool_calls"}],
              "usage": {"prompt_tokens": 412, "completion_tokens": 23, "total_tokens": 435}}
    rows = [{"id": i, "user": f"user{i:04d}", "email": f"user{i:04d}@example.org", "active": i % 3 != 0,
             "score": round(i * 3.14159, 3), "tags": ["alpha", "beta"][: i % 3]} for i in range(30)]
    return [json.dumps(tool), json.dumps(tool, indent=2), json.dumps(answer), json.dumps(rows),
            json.dumps(rows[:8], indent=2), json.dumps({"messages": [{"role": "user", "content": ENGLISH[0]}]})]


def corpus() -> dict[str, list[str]]:
    """Every kind's texts."""
    docs = sorted((ROOT / "docs").glob("*.md"))
    sources = [ROOT / "hermes_core" / "_llm" / name for name in ("budget.py", "ledger.py", "gate.py")]
    kinds = {
        "English prose": ENGLISH + [p for page in docs[:6] for p in _prose(page)][:30],
        "code": CODE + [path.read_text(encoding="utf-8") for path in sources],
        "JSON": _json_texts(),
        "markdown (docs pages)": [(ROOT / "docs" / name).read_text(encoding="utf-8") for name in ("llm.md", "fleet.md")],
        "Chinese": CHINESE, "Japanese": JAPANESE, "Korean": KOREAN,
        "Cyrillic, Greek, Arabic, Devanagari, Thai": OTHER_SCRIPTS,
        "French, German, Spanish": EUROPEAN,
        "emoji": EMOJI,
    }
    kinds.update(generated())
    return kinds
