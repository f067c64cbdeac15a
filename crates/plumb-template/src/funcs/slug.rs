//! `slugify`: gosimple/slug's `Make` as flux-operator configures it (63 characters at most,
//! cut at a dash when possible).

const MAX_LENGTH: usize = 63;

/// Latin letters with diacritics and a few ligatures, as unidecode spells them in ASCII.
fn transliterate(c: char) -> Option<&'static str> {
    Some(match c {
        'À'..='Å' => "A",
        'Æ' => "AE",
        'Ç' => "C",
        'È'..='Ë' => "E",
        'Ì'..='Ï' => "I",
        'Ð' => "D",
        'Ñ' => "N",
        'Ò'..='Ö' | 'Ø' => "O",
        'Ù'..='Ü' => "U",
        'Ý' => "Y",
        'Þ' => "Th",
        'ß' => "ss",
        'à'..='å' => "a",
        'æ' => "ae",
        'ç' => "c",
        'è'..='ë' => "e",
        'ì'..='ï' => "i",
        'ð' => "d",
        'ñ' => "n",
        'ò'..='ö' | 'ø' => "o",
        'ù'..='ü' => "u",
        'ý' | 'ÿ' => "y",
        'þ' => "th",
        'Ł' => "L",
        'ł' => "l",
        'Œ' => "OE",
        'œ' => "oe",
        'Š' => "S",
        'š' => "s",
        'Ž' => "Z",
        'ž' => "z",
        'Č' => "C",
        'č' => "c",
        'Ř' => "R",
        'ř' => "r",
        'Ě' => "E",
        'ě' => "e",
        'Ů' => "U",
        'ů' => "u",
        'Ő' => "O",
        'ő' => "o",
        'Ű' => "U",
        'ű' => "u",
        'Ą' => "A",
        'ą' => "a",
        'Ę' => "E",
        'ę' => "e",
        'Ś' => "S",
        'ś' => "s",
        'Ź' | 'Ż' => "Z",
        'ź' | 'ż' => "z",
        'Ć' => "C",
        'ć' => "c",
        'Ń' => "N",
        'ń' => "n",
        'Ğ' => "G",
        'ğ' => "g",
        'İ' => "I",
        'ı' => "i",
        'Ş' => "S",
        'ş' => "s",
        _ => return None,
    })
}

/// A slug: trimmed, `&`→`and`, `@`→`at`, quotes dropped, dashes unified, lower case, every
/// other character a `-`, runs of dashes collapsed, dashes and underscores trimmed, cut to 63.
pub fn slugify(s: &str) -> String {
    let mut t = String::new();
    for c in s.trim().chars() {
        match c {
            '&' => t.push_str("and"),
            '@' => t.push_str("at"),
            '"' | '\'' | '’' => {}
            '‒' | '–' | '—' | '―' => t.push('-'),
            c if c.is_ascii() => t.push(c),
            c => match transliterate(c) {
                Some(a) => t.push_str(a),
                None => t.push('-'),
            },
        }
    }
    let lower = t.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '-'
        };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_matches(['-', '_']).to_string();
    if out.len() <= MAX_LENGTH {
        return out;
    }
    for i in (0..=MAX_LENGTH).rev() {
        if out.as_bytes()[i] == b'-' {
            return out[..i].to_string();
        }
    }
    out[..MAX_LENGTH].to_string()
}
