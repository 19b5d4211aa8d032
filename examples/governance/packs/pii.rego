# The PII pack: protected health information, a medical record number together with a
# diagnosis code, in any of the phase's texts (docs/policy-packs.md). E-mails, phones, cards
# and national ids are the gateway's own PII scan's, not this pack's.
package claimwatch.packs.pii

# MRN 00482913, MRN: 482913, MRN#0048291300
mrn_pattern := `\bMRN[:#]?\s?[0-9]{6,10}\b`

# ICD-10 codes written with their decimal part (E11.9, I10.0); U is reserved
icd10_pattern := `\b[A-TV-Z][0-9][0-9AB]\.[0-9A-TV-Z]{1,4}\b`

has_mrn if {
	some t in input.texts
	regex.match(mrn_pattern, t.text)
}

has_diagnosis if {
	some t in input.texts
	regex.match(icd10_pattern, t.text)
}

default decision := {
	"decision": "allow",
	"kind": "baseline_allow",
	"claim": "no rule of the PII pack applies",
	"strength": 0.3,
}

decision := {
	"decision": "deny",
	"kind": "phi_detected",
	"claim": "a medical record number together with a diagnosis code (PHI)",
	"strength": 0.9,
} if {
	has_mrn
	has_diagnosis
}
