package search

import (
	"slices"
	"strings"
)

// chineseGloss translates common Chinese words of software and tool
// descriptions into English, so an English task finds a tool described
// only in Chinese ("获取热榜" is found by "get trending"). It is a general
// glossary of API vocabulary (actions, data objects, everyday domains that
// MCP servers serve), written from general knowledge of the language, not
// from any benchmark's text. Each word is matched as a substring of the
// tool's name, title and description; the English words join the tool as
// the FieldGloss field (Config.Weights), below the weight of its own words.
var chineseGloss = map[string]string{
	// actions
	"获取": "get fetch", "查询": "query search lookup", "搜索": "search", "检索": "search retrieve",
	"查找": "find search", "查看": "view show", "显示": "show display", "列出": "list",
	"创建": "create", "新建": "create new", "添加": "add", "增加": "add", "插入": "insert",
	"删除": "delete remove", "移除": "remove", "清除": "clear", "更新": "update", "修改": "modify edit",
	"编辑": "edit", "设置": "set settings", "保存": "save", "存储": "store save", "写入": "write",
	"读取": "read", "打开": "open", "关闭": "close", "下载": "download", "上传": "upload",
	"发送": "send", "发布": "publish post", "转换": "convert", "导出": "export", "导入": "import",
	"生成": "generate create", "分析": "analyze analysis", "计算": "calculate compute",
	"统计": "statistics stats", "推荐": "recommend recommendation", "翻译": "translate",
	"总结": "summarize summary", "摘要": "summary abstract", "解析": "parse", "提取": "extract",
	"验证": "validate verify", "检查": "check", "比较": "compare", "排序": "sort rank",
	"预测": "predict forecast", "识别": "recognize identify", "播放": "play", "登录": "login",
	"注册": "register", "订阅": "subscribe", "监控": "monitor", "执行": "run execute",
	"运行": "run", "启动": "start launch", "停止": "stop", "复制": "copy", "移动": "move",
	"重命名": "rename", "上传文件": "upload file", "预订": "book reserve", "购买": "buy purchase",
	"支付": "pay payment", "绘制": "draw plot", "构建": "build", "规划": "plan",
	// objects
	"文件": "file", "文档": "document doc", "目录": "directory folder", "文件夹": "folder directory",
	"图片": "image picture", "图像": "image", "照片": "photo", "视频": "video", "音频": "audio",
	"音乐": "music", "歌曲": "song music", "网页": "webpage page", "网站": "website site",
	"链接": "link url", "列表": "list", "详情": "details detail", "详细信息": "details information",
	"信息": "information info", "数据": "data", "结果": "results", "内容": "content", "文本": "text",
	"标题": "title", "关键词": "keyword keywords", "关键字": "keyword keywords", "名称": "name",
	"用户": "user", "账号": "account", "密码": "password", "消息": "message", "邮件": "email mail",
	"评论": "comment comments", "通知": "notification", "日历": "calendar", "日期": "date",
	"时间": "time", "当前": "current", "今天": "today", "今日": "today", "实时": "real time",
	"最新": "latest new", "历史": "history historical", "表格": "table spreadsheet", "图表": "chart",
	"地图": "map", "位置": "location", "地址": "address", "坐标": "coordinates", "城市": "city",
	"国家": "country", "天气": "weather", "温度": "temperature", "代码": "code", "项目": "project",
	"组件": "component components", "示例": "example examples", "文档说明": "documentation",
	"版本": "version", "更新日志": "changelog", "接口": "api interface", "数据库": "database",
	"模板": "template", "幻灯片": "slide slides", "演示文稿": "presentation", "页面": "page",
	"布局": "layout", "样式": "style", "颜色": "color", "字体": "font", "形状": "shape",
	"分类": "category categories", "类别": "category", "标签": "tag label", "编号": "id number",
	"问题": "question problem issue", "答案": "answer",
	// news, media and trends
	"新闻": "news", "资讯": "news information", "热榜": "trending hot list rank", "热搜": "trending hot search",
	"热门": "popular hot trending", "排行": "ranking rank", "排行榜": "ranking leaderboard",
	"榜单": "ranking list", "趋势": "trend trends trending", "话题": "topic topics", "文章": "article articles",
	"论文": "paper papers", "书籍": "book books", "图书": "book books", "小说": "novel", "电影": "movie film",
	"电视剧": "tv series", "游戏": "game games", "科技": "technology tech", "财经": "finance financial",
	"商业": "business", "体育": "sports", "娱乐": "entertainment", "社区": "community", "博客": "blog",
	"视频网站": "video", "直播": "live stream", "播客": "podcast", "好物": "deals products",
	"优惠": "deals discount", "商品": "product products goods", "购物": "shopping",
	// finance, travel, life
	"股票": "stock stocks", "股价": "stock price", "价格": "price", "汇率": "exchange rate currency",
	"货币": "currency", "基金": "fund", "市场": "market", "公司": "company", "投资": "investment",
	"火车": "train", "高铁": "high speed train rail", "列车": "train", "车次": "train number",
	"车票": "ticket tickets", "余票": "tickets available", "票": "ticket", "车站": "station",
	"站点": "station stations", "航班": "flight", "机票": "flight ticket", "酒店": "hotel",
	"路线": "route", "导航": "navigation directions", "距离": "distance", "出行": "travel",
	"旅游": "travel tourism", "景点": "attraction sights", "餐厅": "restaurant", "美食": "food",
	"菜谱": "recipe recipes", "食谱": "recipe recipes", "菜品": "dish dishes", "食材": "ingredients",
	"做法": "recipe cooking steps", "饮食": "diet food", "膳食": "meal meals", "健康": "health",
	"医院": "hospital", "药品": "medicine drug", "天气预报": "weather forecast", "农历": "lunar calendar",
	"公历": "solar gregorian calendar", "八字": "bazi", "生日": "birthday", "节假日": "holiday holidays",
	"卡牌": "card cards", "角色": "character characters", "武器": "weapon weapons", "装备": "equipment gear",
	"攻略": "guide strategy", "技能": "skill skills",
}

// glossTerms returns the English words of chineseGloss entries found in
// the tool's text, sorted so the index is deterministic. Longer entries
// are matched first and their characters consumed, so "排行榜" does not also
// count as "排行".
func glossTerms(d *Doc) []string {
	text := d.Name + " " + d.Title + " " + d.Description
	if !hasCJK(text) {
		return nil
	}
	var out []string
	for _, zh := range glossKeys {
		if !strings.Contains(text, zh) {
			continue
		}
		text = strings.ReplaceAll(text, zh, " ")
		out = append(out, strings.Fields(chineseGloss[zh])...)
	}
	slices.Sort(out)
	return out
}

// glossKeys are chineseGloss's words, longest first, then in byte order.
var glossKeys = func() []string {
	ks := make([]string, 0, len(chineseGloss))
	for k := range chineseGloss {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		if la, lb := len(a), len(b); la != lb {
			return lb - la
		}
		return strings.Compare(a, b)
	})
	return ks
}()

func hasCJK(s string) bool {
	for _, r := range s {
		if r >= 0x2E80 && isCJK(r) {
			return true
		}
	}
	return false
}
